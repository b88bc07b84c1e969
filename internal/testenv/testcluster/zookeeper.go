package testcluster

// ZooKeeper for tests.
//
// Each test binary starts at most one standalone ZooKeeper and one 3-server
// ensemble, on first use, and shares them among all its tests. Nothing has
// to stop them: every JVM runs with SIGKILL as its parent-death signal
// (internal/spawn), so it dies with the test binary however the binary
// ends, and each server's temporary folder is named after the binary's pid,
// so the next binary that starts a server removes folders whose owner is
// dead. A package that wants them stopped and removed in order calls
// testcluster.Main from its TestMain (see main.go).
//
// The servers tick every 500 ms, so sessions may time out after 1 s to
// 10 s (tests of expiry need not wait long), allow unlimited connections
// per IP, and whitelist srvr, conf, mntr, ruok, wchs and cons. If ZooKeeper
// is not installed, the test fails and says what to install.

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
)

// zkTickTime is the test servers' tick: sessions of 1 s to 10 s.
const zkTickTime = 500 * time.Millisecond

// zkServer is one shared server or ensemble, started once.
type zkServer struct {
	nodes  int
	heapMB int
	once   sync.Once
	c      *zkcluster.Cluster
	err    error
}

var (
	zkStandalone = &zkServer{nodes: 1, heapMB: 512}
	zkEnsemble   = &zkServer{nodes: 3, heapMB: 256}
)

// get starts the server on first use; later calls get the same one, or the
// same start error.
func (z *zkServer) get(tb testing.TB) *zkcluster.Cluster {
	tb.Helper()
	z.once.Do(func() {
		dir, err := serverDir("zkbench-testzk-")
		if err != nil {
			z.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		z.c, z.err = zkcluster.Start(ctx, zkcluster.Options{Nodes: z.nodes, Dir: dir, TickTime: zkTickTime, HeapMB: z.heapMB})
		if z.err != nil {
			os.RemoveAll(dir)
			return
		}
		atExit(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = z.c.Stop(ctx)
			os.RemoveAll(dir)
		})
	})
	if z.err != nil {
		tb.Fatalf("testcluster: cannot start a %d-server ZooKeeper: %v", z.nodes, z.err)
	}
	return z.c
}

func (z *zkServer) backend(tb testing.TB) backends.Backend {
	tb.Helper()
	c := z.get(tb)
	b, err := zkbackend.New(zkbackend.Config{Endpoints: c.Endpoints()}, zkbackend.WithServerPIDs(c.PIDs()))
	if err != nil {
		tb.Fatalf("testcluster: %v", err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// ZooKeeperBackend returns a fresh Backend on the test binary's shared
// standalone ZooKeeper, closed when tb ends (with every session it opened).
// Its Scrape includes the server's CPU and memory.
func ZooKeeperBackend(tb testing.TB) backends.Backend {
	tb.Helper()
	return zkStandalone.backend(tb)
}

// ZooKeeperEnsembleBackend is ZooKeeperBackend on the shared 3-server
// ensemble; sessions spread over its servers at random.
func ZooKeeperEnsembleBackend(tb testing.TB) backends.Backend {
	tb.Helper()
	return zkEnsemble.backend(tb)
}

// ZooKeeperEndpoints returns the shared standalone server's endpoint, for
// tests that configure a Backend themselves.
func ZooKeeperEndpoints(tb testing.TB) []string {
	tb.Helper()
	return zkStandalone.get(tb).Endpoints()
}

// ZooKeeperEnsembleEndpoints returns the shared ensemble's endpoints.
func ZooKeeperEnsembleEndpoints(tb testing.TB) []string {
	tb.Helper()
	return zkEnsemble.get(tb).Endpoints()
}
