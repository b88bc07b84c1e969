package backendtest_test

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/backendtest"
	"github.com/zkbench/zkbench/internal/testcluster"
)

// TestConformanceEnsemble runs the suite against a 3-server ZooKeeper
// ensemble, where a session's server may lag the leader and server counters
// are summed over members. The standalone servers and the 3-member etcd
// cluster are covered by each backend's own conformance test
// (backends/zookeeper, backends/etcd).
func TestConformanceEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server ZooKeeper ensemble; skipped with -short")
	}
	backendtest.Run(t, func(t *testing.T) backends.Backend { return testcluster.ZooKeeperEnsembleBackend(t) })
}
