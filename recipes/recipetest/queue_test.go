package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes/variants"
)

// queueSubtestsOnClusters: replication can change delivery and the herd.
var queueSubtestsOnClusters = []string{"ExactlyOnce", "IdleWakes", "SessionLostAfterTake"}

// TestQueues runs the queue suite for every variant on every backend.
func TestQueues(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Queues().All() {
			t.Run(v.Name, func(t *testing.T) { RunQueueSuite(t, b, v) })
		}
	})
}

// TestQueuesOnClusters runs part of the queue suite on both 3-node
// clusters.
func TestQueuesOnClusters(t *testing.T) {
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Queues().All() {
			t.Run(v.Name, func(t *testing.T) { RunQueueSuite(t, b, v, queueSubtestsOnClusters...) })
		}
	})
}
