package etcd_test

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/faults/proxy"
)

// slowRequests delays requests through p by d: a watch armed right after a
// read reaches the server d after a change made directly meanwhile.
const slowRequests = time.Second

// The watch follows the read's revision: a change made after ExistsW's read
// but before its watch reaches the server still fires.
func TestExistsWCatchesChangeRightAfterRead(t *testing.T) {
	b, p, ns := proxied(t)
	s := session(t, b)
	c := direct(t)
	ctx := ctxFor(t, 30*time.Second)
	key := ns + "/k"
	if _, err := c.Put(ctx, key, "v1"); err != nil {
		t.Fatal(err)
	}

	p.SetDirectionLatency(proxy.ClientToServer, slowRequests, 0)
	exists, n, ch, err := s.ExistsW(ctx, key)
	if err != nil || !exists || n.Path != key {
		t.Fatalf("ExistsW = %v %+v %v", exists, n, err)
	}
	// The watch request is now in the proxy for about a second.
	if _, err := c.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	p.SetDirectionLatency(proxy.ClientToServer, 0, 0)
	if ev := event(t, ch, 10*time.Second); ev.Type != backends.EventDeleted || ev.Path != key {
		t.Fatalf("event %+v, want deleted %s", ev, key)
	}
}

func TestChildrenWCatchesChangeRightAfterRead(t *testing.T) {
	b, p, ns := proxied(t)
	s := session(t, b)
	c := direct(t)
	ctx := ctxFor(t, 30*time.Second)
	p.SetDirectionLatency(proxy.ClientToServer, slowRequests, 0)
	kids, ch, err := s.ChildrenW(ctx, ns)
	if err != nil || len(kids) != 0 {
		t.Fatalf("ChildrenW = %v %v", kids, err)
	}
	if _, err := c.Put(ctx, ns+"/new", ""); err != nil {
		t.Fatal(err)
	}
	p.SetDirectionLatency(proxy.ClientToServer, 0, 0)
	if ev := event(t, ch, 10*time.Second); ev.Type != backends.EventChildrenChanged || ev.Path != ns {
		t.Fatalf("event %+v, want children-changed %s", ev, ns)
	}
}

// ChildrenW, like ZooKeeper's, fires on a child's creation or deletion,
// not on a new value or on deeper keys.
func TestChildrenWIgnoresValueChanges(t *testing.T) {
	b, ns := open(t)
	s := session(t, b)
	c := direct(t)
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Put(ctx, ns+"/a", "1"); err != nil {
		t.Fatal(err)
	}
	kids, ch, err := s.ChildrenW(ctx, ns)
	if err != nil || len(kids) != 1 {
		t.Fatalf("ChildrenW = %v %v", kids, err)
	}
	if _, err := c.Put(ctx, ns+"/a", "2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, ns+"/a/deeper", "x"); err != nil {
		t.Fatal(err)
	}
	quiet(t, ch, 500*time.Millisecond)
	if _, err := c.Delete(ctx, ns+"/a"); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, ch, 10*time.Second); ev.Type != backends.EventChildrenChanged {
		t.Fatalf("event %+v", ev)
	}
}

// When the revisions after the read are compacted before the watch starts,
// the watch re-reads: it fires if the node changed meanwhile, and otherwise
// watches on from the new read without a spurious event.
func TestWatchAcrossCompaction(t *testing.T) {
	b, p, ns := proxied(t)
	s := session(t, b)
	c := direct(t)
	ctx := ctxFor(t, 30*time.Second)
	changed, same := ns+"/changed", ns+"/same"
	for _, k := range []string{changed, same} {
		if _, err := c.Put(ctx, k, "v1"); err != nil {
			t.Fatal(err)
		}
	}
	p.SetDirectionLatency(proxy.ClientToServer, slowRequests, 0)
	_, _, chChanged, err := s.ExistsW(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	_, _, chSame, err := s.ExistsW(ctx, same)
	if err != nil {
		t.Fatal(err)
	}
	// Change one key, then compact away every revision the watches need.
	if _, err := c.Put(ctx, changed, "v2"); err != nil {
		t.Fatal(err)
	}
	r, err := c.Put(ctx, ns+"/unrelated", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, r.Header.Revision); err != nil {
		t.Fatal(err)
	}
	p.SetDirectionLatency(proxy.ClientToServer, 0, 0)

	if ev := event(t, chChanged, 10*time.Second); ev.Type != backends.EventDataChanged {
		t.Fatalf("compacted watch on a changed key: %+v, want data-changed", ev)
	}
	quiet(t, chSame, 500*time.Millisecond)
	if _, err := c.Delete(ctx, same); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, chSame, 10*time.Second); ev.Type != backends.EventDeleted {
		t.Fatalf("re-armed watch: %+v, want deleted", ev)
	}
}
