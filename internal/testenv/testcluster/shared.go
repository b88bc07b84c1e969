package testcluster

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// sharedServer is one test server of the binary (a ZooKeeper or an etcd,
// one node or three), started on first use in a folder of its own, shared by
// every test, and stopped by Main.
type sharedServer[S interface{ Endpoints() []string }] struct {
	what    string        // "a 3-server ZooKeeper", for the start error
	prefix  string        // of its folder (serverDir)
	timeout time.Duration // of the start
	start   func(ctx context.Context, dir string) (S, error)
	// stop stops it; its folder is removed when stop returns nil.
	stop func(ctx context.Context, s S) error
	// open makes a Backend on it.
	open func(s S) (backends.Backend, error)

	once sync.Once
	s    S
	err  error
}

// get starts the server on first use; later calls get the same one, or the
// same start error.
func (v *sharedServer[S]) get(tb testing.TB) S {
	tb.Helper()
	v.once.Do(func() {
		dir, err := serverDir(v.prefix)
		if err != nil {
			v.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), v.timeout)
		defer cancel()
		v.s, v.err = v.start(ctx, dir)
		if v.err != nil {
			os.RemoveAll(dir)
			return
		}
		atExit(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if v.stop(ctx, v.s) == nil {
				os.RemoveAll(dir)
			}
		})
	})
	if v.err != nil {
		tb.Fatalf("testcluster: cannot start %s: %v", v.what, v.err)
	}
	return v.s
}

// backend returns a fresh Backend on the server, closed when tb ends (with
// every session it opened).
func (v *sharedServer[S]) backend(tb testing.TB) backends.Backend {
	tb.Helper()
	b, err := v.open(v.get(tb))
	if err != nil {
		tb.Fatalf("testcluster: %v", err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// endpoints returns the server's client endpoints.
func (v *sharedServer[S]) endpoints(tb testing.TB) []string {
	tb.Helper()
	return v.get(tb).Endpoints()
}
