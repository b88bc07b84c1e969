package testcluster

// etcd for tests.
//
// Each test binary starts at most one embedded etcd member and one embedded
// 3-member cluster, in-process, on first use, and shares them among all its
// tests. They die with the test binary; each one's folder is named after the
// binary's pid, so the next binary that starts one removes folders whose
// owner is dead. A package that wants them closed and removed in order calls
// testcluster.Main from its TestMain.
//
// The test servers skip fsync (cluster/etcd's UnsafeNoFsync): tests do not
// check durability across power loss, and a fsync per write makes a loaded
// disk the bottleneck of every test. Sessions use the default 5 s lease TTL.
//
// Being in-process, the servers share the test binary's Prometheus registry:
// the Backends are configured Embedded, so Scrape reads one member, and its
// counters include every test's traffic in the binary, not only the
// caller's.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
)

// etcdServer is the shared embedded member (nodes 1) or cluster.
func etcdServer(nodes int) *sharedServer[*etcdcluster.Embedded] {
	return &sharedServer[*etcdcluster.Embedded]{
		what:    fmt.Sprintf("a %d-member embedded etcd", nodes),
		prefix:  "zkbench-testetcd-",
		timeout: 60 * time.Second,
		start: func(ctx context.Context, dir string) (*etcdcluster.Embedded, error) {
			return etcdcluster.StartEmbedded(ctx, etcdcluster.Options{Dir: dir, Nodes: nodes, UnsafeNoFsync: true})
		},
		stop: func(ctx context.Context, e *etcdcluster.Embedded) error {
			return e.Close(ctx) // its folder stays if Close fails
		},
		open: func(e *etcdcluster.Embedded) (backends.Backend, error) {
			return etcdbackend.New(etcdbackend.Config{Endpoints: e.Endpoints(), Embedded: true})
		},
	}
}

var (
	etcdSingle  = etcdServer(1)
	etcdCluster = etcdServer(3)
)

// EtcdBackend returns a fresh Backend on the test binary's shared embedded
// etcd member, closed when tb ends (with every session it opened).
func EtcdBackend(tb testing.TB) backends.Backend {
	tb.Helper()
	return etcdSingle.backend(tb)
}

// EtcdClusterBackend is EtcdBackend on the shared 3-member embedded cluster;
// each session's client balances over the three members.
func EtcdClusterBackend(tb testing.TB) backends.Backend {
	tb.Helper()
	return etcdCluster.backend(tb)
}

// EtcdEndpoints returns the shared member's client URL, for tests that
// configure a Backend themselves.
func EtcdEndpoints(tb testing.TB) []string {
	tb.Helper()
	return etcdSingle.endpoints(tb)
}

// EtcdClusterEndpoints returns the shared 3-member cluster's client URLs.
func EtcdClusterEndpoints(tb testing.TB) []string {
	tb.Helper()
	return etcdCluster.endpoints(tb)
}
