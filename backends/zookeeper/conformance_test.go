package zookeeper_test

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/backendtest"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestConformance runs the backend conformance suite on the shared
// standalone server and on the shared 3-server ensemble.
func TestConformance(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backends.Backend { return testcluster.ZooKeeperBackend(t) })
	})
	t.Run("ensemble", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backends.Backend { return testcluster.ZooKeeperEnsembleBackend(t) })
	})
}
