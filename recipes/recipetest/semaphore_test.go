package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes/variants"
)

// TestSemaphores runs the lock suite with one permit and the semaphore
// suite for every semaphore variant on both backends.
func TestSemaphores(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Semaphores().All() {
			t.Run(v.Name, func(t *testing.T) {
				t.Run("lock", func(t *testing.T) { RunSemaphoreAsLockSuite(t, b, v) })
				RunSemaphoreSuite(t, b, v)
			})
		}
	})
}

// TestSemaphoresOnClusters runs the subtests where replication can change
// the outcome on both 3-node clusters.
func TestSemaphoresOnClusters(t *testing.T) {
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Semaphores().All() {
			t.Run(v.Name, func(t *testing.T) {
				t.Run("lock", func(t *testing.T) { RunSemaphoreAsLockSuite(t, b, v, "Exclusion", "HolderSessionLost") })
				RunSemaphoreSuite(t, b, v, "AnyReleaseAdmits", "AtMostK", "ReleaseWakes")
			})
		}
	})
}
