package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// EachBackend runs f once per backend kind, as subtests "zookeeper" (a
// standalone ZooKeeper, ZooKeeperBackend) and "etcd" (one embedded etcd,
// EtcdBackend). Each subtest gets a fresh Backend on the test binary's shared
// server, closed when the subtest ends. The subtests run one after the other.
func EachBackend(t *testing.T, f func(t *testing.T, b backends.Backend)) {
	t.Helper()
	run(t, "zookeeper", ZooKeeperBackend, f)
	run(t, "etcd", EtcdBackend, f)
}

// EachBackendWithClusters is EachBackend followed by EachCluster: f runs on
// "zookeeper", "etcd", "zookeeper-3" and "etcd-3".
func EachBackendWithClusters(t *testing.T, f func(t *testing.T, b backends.Backend)) {
	t.Helper()
	EachBackend(t, f)
	EachCluster(t, f)
}

// EachCluster runs f on the 3-node clusters only, as subtests "zookeeper-3"
// (a 3-server ensemble, ZooKeeperEnsembleBackend) and "etcd-3" (a 3-member
// embedded cluster, EtcdClusterBackend). The clusters are started on first
// use and shared by the test binary; they cost seconds and memory, so use
// this where replication changes what is tested, alongside EachBackend for
// the rest. The subtests run one after the other.
func EachCluster(t *testing.T, f func(t *testing.T, b backends.Backend)) {
	t.Helper()
	run(t, "zookeeper-3", ZooKeeperEnsembleBackend, f)
	run(t, "etcd-3", EtcdClusterBackend, f)
}

func run(t *testing.T, name string, open func(testing.TB) backends.Backend, f func(*testing.T, backends.Backend)) {
	t.Run(name, func(t *testing.T) {
		b := open(t)
		Register(t, b)
		f(t, b)
	})
}

// registered maps a test's name to the backend its subtests use, so that
// TestNamespace(tb) inside EachBackend can find the backend to clean up
// with.
var registered sync.Map // test name -> backends.Backend

// Register makes b the backend that TestNamespace(tb) uses for tb and every
// subtest of tb. EachBackend calls it; a test that opens its backend itself
// may call it, or pass the backend to TestNamespace.
func Register(tb testing.TB, b backends.Backend) {
	name := tb.Name()
	registered.Store(name, b)
	tb.Cleanup(func() { registered.CompareAndDelete(name, b) })
}

func lookup(tb testing.TB) (backends.Backend, bool) {
	name := tb.Name()
	for {
		if v, ok := registered.Load(name); ok {
			return v.(backends.Backend), true
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return nil, false
		}
		name = name[:i]
	}
}

// cleanupTimeout bounds the namespace removal at the end of a test.
const cleanupTimeout = 30 * time.Second

// TestNamespace returns a fresh, unique namespace /zkbench/test-<random> for
// tb and removes it, with everything below it, when tb ends (Admin.DeleteTree
// on a fresh 30 s context; a failure to remove fails the test). The namespace
// node itself is not created: call EnsurePath on it (ZooKeeper needs parents;
// etcd does not).
//
// The backend to clean up with is b if given, else the one registered for tb
// or its nearest parent test (EachBackend registers it; see Register). With
// neither, TestNamespace fails the test: it never leaves data behind
// silently. The namespace is removed before the backend is closed as long as
// the backend was opened before TestNamespace was called (cleanups run last
// in, first out).
func TestNamespace(tb testing.TB, b ...backends.Backend) string {
	tb.Helper()
	var be backends.Backend
	switch len(b) {
	case 0:
		var ok bool
		if be, ok = lookup(tb); !ok {
			tb.Fatalf("testcluster: TestNamespace(%s): no backend; pass one or run inside EachBackend", tb.Name())
		}
	case 1:
		be = b[0]
	default:
		tb.Fatalf("testcluster: TestNamespace takes at most one backend, got %d", len(b))
	}
	admin, ok := be.(backends.Admin)
	if !ok {
		tb.Fatalf("testcluster: backend %s does not implement backends.Admin; cannot clean a namespace", be.Kind())
	}
	var raw [6]byte
	if _, err := rand.Read(raw[:]); err != nil {
		tb.Fatalf("testcluster: random namespace: %v", err)
	}
	id := "test-" + hex.EncodeToString(raw[:])
	if err := backends.ValidRunID(id); err != nil {
		tb.Fatal(err)
	}
	ns := backends.Namespace(id)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := admin.DeleteTree(ctx, ns); err != nil && !errors.Is(err, backends.ErrNoNode) {
			tb.Errorf("testcluster: removing namespace %s: %v", ns, err)
		}
	})
	return ns
}
