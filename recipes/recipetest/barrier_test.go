package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testcluster"
	"github.com/zkbench/zkbench/recipes/barriervariants"
	"github.com/zkbench/zkbench/recipes/fair"
)

// TestDoubleBarriers runs the double barrier suite for every variant on
// every backend.
func TestDoubleBarriers(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, name := range barriervariants.Names() {
			v, err := barriervariants.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(name, func(t *testing.T) { RunDoubleBarrierSuite(t, b, v) })
		}
	})
}

// TestSimpleBarrier runs the simple barrier suite on every backend.
func TestSimpleBarrier(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		RunBarrierSuite(t, b, fair.NewBarrierFactory())
	})
}
