package etcd_test

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/backendtest"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestConformance runs the backend conformance suite on the shared embedded
// etcd member.
func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backends.Backend { return testcluster.EtcdBackend(t) })
}

// TestConformanceCluster runs it on the shared 3-member embedded cluster,
// where a session's client spreads its requests over the members.
func TestConformanceCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	backendtest.Run(t, func(t *testing.T) backends.Backend { return testcluster.EtcdClusterBackend(t) })
}
