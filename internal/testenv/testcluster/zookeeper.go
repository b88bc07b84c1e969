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
	"fmt"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
)

// zkTickTime is the test servers' tick: sessions of 1 s to 10 s.
const zkTickTime = 500 * time.Millisecond

// ensembleSession is the session timeout of the ensemble's backends, the
// longest its servers grant (20 ticks). An ensemble on a loaded machine
// may lose its leader: a follower that misses the leader for 5 ticks
// (2.5 s) gives it up, and a session survives only if the servers elect
// another and its client reconnects within the timeout. With the backend's
// default 4 s that left 1.5 s; with 10 s it leaves 7.5 s. Sessions on the
// ensemble are not what its tests time (they close a session to end it).
const ensembleSession = 20 * zkTickTime

// zkServer is the shared standalone server (nodes 1) or ensemble; its
// backends ask for sessions of the given timeout (0: the backend's
// default).
func zkServer(nodes, heapMB int, session time.Duration) *sharedServer[*zkcluster.Cluster] {
	return &sharedServer[*zkcluster.Cluster]{
		what:    fmt.Sprintf("a %d-server ZooKeeper", nodes),
		prefix:  "zkbench-testzk-",
		timeout: 90 * time.Second,
		start: func(ctx context.Context, dir string) (*zkcluster.Cluster, error) {
			return zkcluster.Start(ctx, zkcluster.Options{Nodes: nodes, Dir: dir, TickTime: zkTickTime, HeapMB: heapMB})
		},
		stop: func(ctx context.Context, c *zkcluster.Cluster) error {
			_ = c.Stop(ctx)
			return nil // its folder is removed whatever Stop says
		},
		open: func(c *zkcluster.Cluster) (backends.Backend, error) {
			return zkbackend.New(zkbackend.Config{Endpoints: c.Endpoints(), SessionTimeout: session}, zkbackend.WithServerPIDs(c.PIDs()))
		},
	}
}

var (
	zkStandalone = zkServer(1, 512, 0)
	zkEnsemble   = zkServer(3, 256, ensembleSession)
)

// ZooKeeperBackend returns a fresh Backend on the test binary's shared
// standalone ZooKeeper, closed when tb ends (with every session it opened).
// Its Scrape includes the server's CPU and memory.
func ZooKeeperBackend(tb testing.TB) backends.Backend {
	tb.Helper()
	return zkStandalone.backend(tb)
}

// ZooKeeperEnsembleBackend is ZooKeeperBackend on the shared 3-server
// ensemble; sessions spread over its servers at random and time out
// after 10 s (ensembleSession).
func ZooKeeperEnsembleBackend(tb testing.TB) backends.Backend {
	tb.Helper()
	return zkEnsemble.backend(tb)
}

// ZooKeeperEndpoints returns the shared standalone server's endpoint, for
// tests that configure a Backend themselves.
func ZooKeeperEndpoints(tb testing.TB) []string {
	tb.Helper()
	return zkStandalone.endpoints(tb)
}

// ZooKeeperEnsembleEndpoints returns the shared ensemble's endpoints.
func ZooKeeperEnsembleEndpoints(tb testing.TB) []string {
	tb.Helper()
	return zkEnsemble.endpoints(tb)
}
