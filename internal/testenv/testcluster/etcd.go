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
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
)

// etcdServer is one shared embedded member or cluster, started once.
type etcdServer struct {
	nodes int
	once  sync.Once
	e     *etcdcluster.Embedded
	err   error
}

var (
	etcdSingle  = &etcdServer{nodes: 1}
	etcdCluster = &etcdServer{nodes: 3}
)

// get starts the server on first use; later calls get the same one, or the
// same start error.
func (s *etcdServer) get(tb testing.TB) *etcdcluster.Embedded {
	tb.Helper()
	s.once.Do(func() {
		dir, err := serverDir("zkbench-testetcd-")
		if err != nil {
			s.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s.e, s.err = etcdcluster.StartEmbedded(ctx, etcdcluster.Options{Dir: dir, Nodes: s.nodes, UnsafeNoFsync: true})
		if s.err != nil {
			os.RemoveAll(dir)
			return
		}
		atExit(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if s.e.Close(ctx) == nil {
				os.RemoveAll(dir)
			}
		})
	})
	if s.err != nil {
		tb.Fatalf("testcluster: cannot start a %d-member embedded etcd: %v", s.nodes, s.err)
	}
	return s.e
}

func (s *etcdServer) backend(tb testing.TB) backends.Backend {
	tb.Helper()
	e := s.get(tb)
	b, err := etcdbackend.New(etcdbackend.Config{Endpoints: e.Endpoints(), Embedded: true})
	if err != nil {
		tb.Fatalf("testcluster: %v", err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

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
	return etcdSingle.get(tb).Endpoints()
}

// EtcdClusterEndpoints returns the shared 3-member cluster's client URLs.
func EtcdClusterEndpoints(tb testing.TB) []string {
	tb.Helper()
	return etcdCluster.get(tb).Endpoints()
}
