package zookeeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/faults/proxy"
)

// watchCount scrapes the server's watch notifications (MetricWatchEvents).
func watchCount(t *testing.T, b *zookeeper.Backend) float64 {
	t.Helper()
	m, err := b.Scrape(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return m[backends.MetricWatchEvents]
}

// serverWatchesMoved waits until the server's watch notifications since
// before reach want, then checks they stay there a moment.
func serverWatchesMoved(t *testing.T, b *zookeeper.Backend, before, want float64) {
	t.Helper()
	waitFor(t, 10*time.Second, "server watch count", func() bool { return watchCount(t, b)-before >= want })
	time.Sleep(300 * time.Millisecond)
	if got := watchCount(t, b) - before; got != want {
		t.Fatalf("server sent %v watch notifications, want %v", got, want)
	}
}

// A watch whose ExistsW request was still in flight when its ctx ended is
// armed on the server all the same: its notification is a late event.
func TestLateWatchArmedAfterCallerGaveUp(t *testing.T) {
	direct := open(t, zookeeper.Config{})
	ds := newSession(t, direct)
	ns := namespace(t, direct, ds)
	p, b := proxied(t, 10*time.Second)
	s := newSession(t, b)
	node := ns + "/n"
	before := watchCount(t, direct)

	// Hold the reply back until the caller has given up: 3 s leaves the
	// caller's goroutine 2.8 s to see its 200 ms deadline pass first.
	p.SetDirectionLatency(proxy.ServerToClient, 3*time.Second, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, _, _, err := s.ExistsW(ctx, node)
	cancel()
	p.SetDirectionLatency(proxy.ServerToClient, 0, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ExistsW with a held reply: %v, want deadline exceeded", err)
	}
	// A later reply cannot overtake the held one: once it is back, the
	// watch is armed on the server and in the client.
	if _, err := s.Children(ctxT(t), ns); err != nil {
		t.Fatal(err)
	}
	if _, err := ds.Create(ctxT(t), node, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "late watch event counted", func() bool { return s.LateWatchEvents() == 1 })
	serverWatchesMoved(t, direct, before, 1)
	if got := s.LateWatchEvents(); got != 1 {
		t.Fatalf("LateWatchEvents = %d, want 1", got)
	}
}

// An abandoned watch that has not fired shares the server-side watcher of a
// new watch on the same path: one notification, counted once, by the
// watch that is waited on.
func TestLateWatchSharedWithLiveWatch(t *testing.T) {
	b := open(t, zookeeper.Config{})
	owner, s := newSession(t, b), newSession(t, b)
	ns := namespace(t, b, owner)
	node := ns + "/n"
	before := watchCount(t, b)

	ctx, cancel := context.WithCancel(ctxT(t))
	_, _, abandoned, err := s.ExistsW(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitChanClosed(t, abandoned)
	_, _, live, err := s.ExistsW(ctxT(t), node)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create(ctxT(t), node, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-live:
		if ev.Type != backends.EventCreated {
			t.Fatalf("live watch: %v, want created", ev.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("live watch did not fire")
	}
	serverWatchesMoved(t, b, before, 1)
	if got := s.LateWatchEvents(); got != 0 {
		t.Fatalf("LateWatchEvents = %d, want 0: the one notification went to the live watch", got)
	}
	// Another abandoned watch, now on the present node, fires on its
	// deletion: a separate notification, and late.
	ctx, cancel = context.WithCancel(ctxT(t))
	_, _, abandoned, err = s.ExistsW(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitChanClosed(t, abandoned)
	if err := owner.Delete(ctxT(t), node); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "late watch event counted", func() bool { return s.LateWatchEvents() == 1 })
	serverWatchesMoved(t, b, before, 2)
	s.Close()
	if got := s.LateWatchEvents(); got != 1 {
		t.Fatalf("LateWatchEvents after Close = %d, want 1", got)
	}
}

// waitChanClosed fails unless a cancelled watch's channel closes, without
// an event, within 10 s (milliseconds on a quiet machine).
func waitChanClosed(t *testing.T, ch <-chan backends.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("abandoned watch delivered %v", ev.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("abandoned watch's channel not closed within 10s")
	}
}
