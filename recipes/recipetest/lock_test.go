package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes/variants"
)

// TestLocks runs the lock suite for every variant on every backend.
func TestLocks(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Locks().All() {
			t.Run(v.Name, func(t *testing.T) { RunLockSuite(t, b, v) })
		}
	})
}
