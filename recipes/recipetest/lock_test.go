package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testcluster"
	"github.com/zkbench/zkbench/recipes/lockvariants"
)

// TestLocks runs the lock suite for every variant on every backend.
func TestLocks(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, name := range lockvariants.Names() {
			v, err := lockvariants.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(name, func(t *testing.T) { RunLockSuite(t, b, v) })
		}
	})
}
