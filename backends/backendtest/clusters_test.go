package backendtest_test

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/backendtest"
	"github.com/zkbench/zkbench/internal/testcluster"
)

// TestConformanceClusters runs the suite against replicated clusters, where
// a session's server may lag the leader and server counters are summed over
// members. The standalone servers are covered by each backend's own
// conformance test (backends/zookeeper, backends/etcd).
func TestConformanceClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server ZooKeeper ensemble and a 3-member etcd cluster; skipped with -short")
	}
	t.Run("zookeeper-3", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backends.Backend { return testcluster.ZooKeeperEnsembleBackend(t) })
	})
	t.Run("etcd-3", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backends.Backend { return testcluster.EtcdClusterBackend(t) })
	})
}
