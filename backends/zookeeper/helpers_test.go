package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// open makes a Backend on the shared standalone server (or cfg.Endpoints),
// closed when t ends.
func open(t *testing.T, cfg zookeeper.Config, opts ...zookeeper.Option) *zookeeper.Backend {
	t.Helper()
	if len(cfg.Endpoints) == 0 {
		cfg.Endpoints = testcluster.ZooKeeperEndpoints(t)
	}
	b, err := zookeeper.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newSession opens a session on b, closed when t ends.
func newSession(t *testing.T, b backends.Backend) *zookeeper.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := b.NewSession(ctx)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*zookeeper.Session)
}

// namespace returns a fresh namespace, created, removed when t ends.
func namespace(t *testing.T, b backends.Backend, s backends.Session) string {
	t.Helper()
	ns := testcluster.TestNamespace(t, b)
	if err := s.EnsurePath(ctxT(t), ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

// ctxT is a 10 s context for one step of a test.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitClosed fails unless ch closes within d.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
