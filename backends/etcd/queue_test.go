package etcd_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
)

// TestDequeueCompanions: a Dequeue reaches the watcher of the node, its
// successor, as one event on the server (the node's delete; its companion
// stays), which the watcher reads as EventDataChanged; the successor's own
// Dequeue removes that companion, and a Dequeue with no node after it
// removes its own, so a queue whose nodes all left by Dequeue holds no key;
// a Delete takes node and companion together; a companion whose successor
// left otherwise stays until its session's next Dequeue, and no listing
// shows it.
func TestDequeueCompanions(t *testing.T) {
	b, ns := open(t)
	s, w := session(t, b), session(t, b)
	ctx := ctxFor(t, 30*time.Second)
	parent := ns + "/q"
	keys := func(want int64, when string) {
		t.Helper()
		r, err := direct(t).Get(ctx, parent+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if r.Count != want {
			t.Errorf("%s: %d keys under %s/, want %d", when, r.Count, parent, want)
		}
	}
	enqueue := func(s *etcd.Session) backends.Node {
		t.Helper()
		n, err := s.Enqueue(ctx, parent, "t")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n1 := enqueue(s)
	keys(2, "after Enqueue (node and companion)")
	m1 := enqueue(w)
	if m1.Prev != n1.Path {
		t.Fatalf("Prev of the second node = %q, want %q", m1.Prev, n1.Path)
	}
	exists, _, ch, err := w.ExistsW(ctx, n1.Path)
	if err != nil || !exists {
		t.Fatalf("ExistsW(%s) = %v, %v", n1.Path, exists, err)
	}
	m0 := scrape(t, b)
	if err := s.Dequeue(ctx, n1); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, ch, 10*time.Second); ev.Type != backends.EventDataChanged {
		t.Errorf("watcher of a dequeued node saw %v, want %v", ev.Type, backends.EventDataChanged)
	}
	settle(t, b, m0, backends.MetricWatchEvents, 1)
	time.Sleep(300 * time.Millisecond) // a second event would come with the first
	if d := scrape(t, b).Delta(m0)[backends.MetricWatchEvents]; d != 1 {
		t.Errorf("server counted %v watch events for one Dequeue with one watcher, want 1", d)
	}
	keys(3, "after the first Dequeue (its companion, the successor's node and companion)")
	if err := w.Dequeue(ctx, m1); err != nil {
		t.Fatal(err)
	}
	keys(0, "after the successor's Dequeue, with nothing after it")
	n2 := enqueue(s)
	if err := s.Dequeue(ctx, n2); err != nil {
		t.Fatal(err)
	}
	keys(0, "after a Dequeue with nothing after it")
	n3 := enqueue(s)
	if err := s.Delete(ctx, n3.Path); err != nil {
		t.Fatal(err)
	}
	keys(0, "after a Delete (node and companion gone)")

	// A successor that leaves otherwise (cancelled, expired) cannot remove
	// the companion: it stays, at most one a session a queue, until that
	// session's next Dequeue under the parent, and no listing shows it.
	h := enqueue(s)
	c := enqueue(w)
	if err := w.Delete(ctx, c.Path); err != nil {
		t.Fatal(err)
	}
	if err := s.Dequeue(ctx, h); err != nil {
		t.Fatal(err)
	}
	keys(1, "after a Dequeue whose successor was deleted (its companion)")
	if names, err := b.List(ctx, parent); err != nil || len(names) != 0 {
		t.Errorf("List(%s) = %q, %v; want no child (a companion is none)", parent, names, err)
	}
	if kids, err := s.Children(ctx, parent); err != nil || len(kids) != 0 {
		t.Errorf("Children(%s) = %v, %v; want none", parent, kids, err)
	}
	if err := s.Dequeue(ctx, enqueue(s)); err != nil {
		t.Fatal(err)
	}
	keys(0, "after the session's next Dequeue")
}
