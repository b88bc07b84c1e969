package etcd_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// open returns a Backend on the shared embedded member, closed at cleanup,
// and a fresh namespace in it.
func open(t testing.TB, opts ...etcd.Option) (*etcd.Backend, string) {
	t.Helper()
	return openConfig(t, etcd.Config{}, opts...)
}

// openConfig is open with cfg's fields (Endpoints are filled in).
func openConfig(t testing.TB, cfg etcd.Config, opts ...etcd.Option) (*etcd.Backend, string) {
	t.Helper()
	cfg.Endpoints = testcluster.EtcdEndpoints(t)
	cfg.Embedded = true
	b, err := etcd.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, testcluster.TestNamespace(t, b)
}

// session opens a session closed at cleanup.
func session(t testing.TB, b *etcd.Backend) *etcd.Session {
	t.Helper()
	s, err := b.OpenSession(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// direct is a plain client on the shared member, bypassing the backend.
func direct(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: testcluster.EtcdEndpoints(t), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// event waits up to d for one event on ch.
func event(t testing.TB, ch <-chan backends.Event, d time.Duration) backends.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed without an event")
		}
		return ev
	case <-time.After(d):
		t.Fatalf("no event within %v", d)
	}
	panic("unreachable")
}

// quiet fails if ch delivers anything or closes within d.
func quiet(t *testing.T, ch <-chan backends.Event, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		t.Fatalf("watch fired early: %+v (open %v)", ev, ok)
	case <-time.After(d):
	}
}
