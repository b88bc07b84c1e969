package backendtest

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkbench/zkbench/backends"
)

func enqueue(t *testing.T, s backends.Session, parent, tag string) backends.Node {
	t.Helper()
	n, err := s.Enqueue(opCtx(t), parent, tag)
	if err != nil {
		t.Fatalf("Enqueue(%s, %s): %v", parent, tag, err)
	}
	return n
}

func predecessor(t *testing.T, s backends.Session, parent string, me backends.Node) (backends.Node, bool) {
	t.Helper()
	return predecessorAfter(t, s, parent, me, "")
}

func predecessorAfter(t *testing.T, s backends.Session, parent string, me backends.Node, gone string) (backends.Node, bool) {
	t.Helper()
	p, ok, err := s.Predecessor(opCtx(t), parent, me, gone)
	if err != nil {
		t.Fatalf("Predecessor(%s, %s): %v", parent, me.Name, err)
	}
	return p, ok
}

// testEnqueuePredecessor: Enqueue's nodes are listed in creation order, each
// one's Predecessor is the live node made just before it (deleted ones are
// skipped), the first has none, and a node that is gone has no
// predecessor but ErrNoNode. Names are the shortest the backend gives:
// on ZooKeeper the bare 10-digit sequence number.
func testEnqueuePredecessor(t *testing.T, e *env) {
	a, b := e.session(t), e.session(t)
	parent := e.p("queue")
	ensure(t, a, parent)
	var q []backends.Node
	for i := range 5 {
		s := a
		if i%2 == 1 {
			s = b
		}
		q = append(q, enqueue(t, s, parent, "t"+string(rune('a'+i%2))))
	}
	got := children(t, a, parent)
	if !slices.Equal(names(got), names(q)) {
		t.Fatalf("Children = %v, want the Enqueue order %v", names(got), names(q))
	}
	if e.kind == backends.ZooKeeper && len(q[0].Name) != 10 {
		t.Errorf("Enqueue made %q on ZooKeeper, want the bare 10-digit sequence number", q[0].Name)
	}
	if _, ok := predecessor(t, a, parent, q[0]); ok {
		t.Errorf("the first node has a predecessor")
	}
	// a asks: it made the last create, so its server has applied every
	// create before it, where b's may lag on an ensemble.
	for i := 1; i < len(q); i++ {
		if p, ok := predecessor(t, a, parent, q[i]); !ok || p.Path != q[i-1].Path {
			t.Errorf("Predecessor(%s) = %s %v, want %s", q[i].Name, p.Path, ok, q[i-1].Path)
		}
	}
	del(t, b, q[3].Path)
	del(t, a, q[2].Path)
	if p, ok := predecessor(t, a, parent, q[4]); !ok || p.Path != q[1].Path {
		t.Errorf("after deleting the two before it, Predecessor(%s) = %s %v, want %s", q[4].Name, p.Path, ok, q[1].Path)
	}
	if _, _, err := a.Predecessor(opCtx(t), parent, q[2], ""); !errors.Is(err, backends.ErrNoNode) {
		t.Errorf("Predecessor of a deleted node: %v, want ErrNoNode", err)
	}
}

// testPredecessorOf: PredecessorOf finds the nearest node before me among
// those whose names start with prefix, skipping the others and deleted
// ones; "" takes every node; nothing before me is false; a node that is
// gone gets ErrNoNode, also when no node of the prefix is left.
func testPredecessorOf(t *testing.T, e *env) {
	a, b := e.session(t), e.session(t)
	parent := e.p("shared")
	ensure(t, a, parent)
	// w0 r1 w2 r3 r4 (w: "lock-write-", r: "lock-read-"), by two sessions.
	var q []backends.Node
	for i, kind := range []string{"write", "read", "write", "read", "read"} {
		s := a
		if i%2 == 1 {
			s = b
		}
		q = append(q, createSeq(t, s, parent, "lock-"+kind+"-"))
	}
	of := func(s backends.Session, prefix string, me backends.Node) (string, bool) {
		t.Helper()
		p, ok, err := s.PredecessorOf(opCtx(t), parent, prefix, me)
		if err != nil {
			t.Fatalf("PredecessorOf(%q, %s): %v", prefix, me.Name, err)
		}
		// The names it received: at least the answer's (the instrument
		// counts them as bytes received).
		if ok && p.Listed < int64(len(p.Name)) {
			t.Errorf("PredecessorOf(%q, %s) = %s, Listed %d, want at least its name's %d bytes", prefix, me.Name, p.Name, p.Listed, len(p.Name))
		}
		return p.Path, ok
	}
	cases := []struct {
		prefix string
		me     int
		want   int // -1: none
	}{
		{"lock-write-", 4, 2},
		{"lock-write-", 3, 2},
		{"lock-write-", 2, 0},
		{"lock-write-", 1, 0},
		{"lock-write-", 0, -1},
		{"lock-read-", 2, 1},
		{"lock-read-", 1, -1},
		{"", 4, 3},
		{"", 1, 0},
		{"", 0, -1},
	}
	// Every query is a's: a made the last create and the deletes, so its
	// server has applied them all, where b's may lag on an ensemble
	// (ZooKeeper promises a session its own writes, not another's).
	for _, c := range cases {
		got, ok := of(a, c.prefix, q[c.me])
		switch {
		case c.want < 0 && ok:
			t.Errorf("PredecessorOf(%q, %s) = %s, want none", c.prefix, q[c.me].Name, got)
		case c.want >= 0 && (!ok || got != q[c.want].Path):
			t.Errorf("PredecessorOf(%q, %s) = %s %v, want %s", c.prefix, q[c.me].Name, got, ok, q[c.want].Path)
		}
	}
	del(t, a, q[2].Path)
	if got, ok := of(a, "lock-write-", q[4]); !ok || got != q[0].Path {
		t.Errorf("after deleting the nearest writer, PredecessorOf = %s %v, want %s", got, ok, q[0].Path)
	}
	del(t, a, q[0].Path)
	if got, ok := of(a, "lock-write-", q[4]); ok {
		t.Errorf("with no writer left, PredecessorOf = %s, want none", got)
	}
	if _, _, err := a.PredecessorOf(opCtx(t), parent, "lock-write-", q[0]); !errors.Is(err, backends.ErrNoNode) {
		t.Errorf("PredecessorOf of a deleted node: %v, want ErrNoNode", err)
	}
}

// testEnqueuePrev: Node.Prev names the node made just before under the same
// parent, also after deletes under it (ZooKeeper numbers a parent's
// children by its creates only; etcd's tail key names the last enqueued).
func testEnqueuePrev(t *testing.T, e *env) {
	s := e.session(t)
	parent := e.p("prev")
	ensure(t, s, parent)
	first := enqueue(t, s, parent, "t")
	if first.Prev != "" {
		t.Errorf("Prev of the first node = %q, want none", first.Prev)
	}
	second := enqueue(t, s, parent, "t")
	if second.Prev != first.Path {
		t.Fatalf("Prev of the second node = %q, want %q", second.Prev, first.Path)
	}
	// Whatever names Prev is no child of parent (etcd's tail key).
	if got, want := names(children(t, s, parent)), []string{first.Name, second.Name}; !slices.Equal(got, want) {
		t.Errorf("Children = %v, want %v", got, want)
	}
	del(t, s, first.Path)
	del(t, s, second.Path)
	third := enqueue(t, s, parent, "t")
	if third.Prev != second.Path {
		t.Errorf("after deleting both, Prev of the third node = %q, want %q (deletes must not count)", third.Prev, second.Path)
	}
	fourth := enqueue(t, s, parent, "t")
	if fourth.Prev != third.Path {
		t.Errorf("Prev of the fourth node = %q, want %q", fourth.Prev, third.Path)
	}
}

// testTagged: Tagged finds the nodes this session made with a tag, in
// order, and neither another tag's nor another session's; an absent
// parent has none.
func testTagged(t *testing.T, e *env) {
	a, b := e.session(t), e.session(t)
	parent := e.p("tagged")
	ensure(t, a, parent)
	mine1 := enqueue(t, a, parent, "mine")
	enqueue(t, a, parent, "other")
	enqueue(t, b, parent, "mine")
	mine2 := enqueue(t, a, parent, "mine")
	got, err := a.Tagged(opCtx(t), parent, "mine")
	if err != nil {
		t.Fatalf("Tagged: %v", err)
	}
	if want := []string{mine1.Name, mine2.Name}; !slices.Equal(names(got), want) {
		t.Errorf("Tagged = %v, want %v", names(got), want)
	}
	if got, err := a.Tagged(opCtx(t), e.p("absent"), "mine"); err != nil || len(got) != 0 {
		t.Errorf("Tagged of an absent parent = %v, %v; want none", names(got), err)
	}
}

// testDequeue: Dequeue removes the node; a watcher of it sees
// EventDataChanged on every backend (ZooKeeper: the multi's data change;
// etcd: the node deleted without its companion), where a Delete of an
// Enqueue'd node is EventDeleted; the node before it keeps its place; a
// second Dequeue returns ErrNoNode.
func testDequeue(t *testing.T, e *env) {
	owner, watcher := e.session(t), e.session(t)
	parent := e.p("dequeue")
	ensure(t, owner, parent)
	first := enqueue(t, owner, parent, "t")
	me := enqueue(t, owner, parent, "t")
	last := enqueue(t, owner, parent, "t")
	ctx, cancel := contextWithCancel(t)
	defer cancel()
	exists, _, ch, err := watcher.ExistsW(ctx, me.Path)
	if err != nil || !exists {
		t.Fatalf("ExistsW(%s) = %v, %v; want a watch on a live node", me.Path, exists, err)
	}
	if err := owner.Dequeue(opCtx(t), me); err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	wantEvent(t, nextEvent(t, ch, "ExistsW on a dequeued node"), backends.EventDataChanged, me.Path)
	gone(t, watcher, me.Path, eventBound)
	// A Delete is no Dequeue. The watcher makes the node, so that its own
	// server has it (on a ZooKeeper ensemble the owner's may be ahead).
	other := enqueue(t, watcher, parent, "t")
	exists, _, ch, err = watcher.ExistsW(ctx, other.Path)
	if err != nil || !exists {
		t.Fatalf("ExistsW(%s) = %v, %v; want a watch on a live node", other.Path, exists, err)
	}
	del(t, owner, other.Path)
	wantEvent(t, nextEvent(t, ch, "ExistsW on a deleted Enqueue'd node"), backends.EventDeleted, other.Path)
	if p, ok := predecessor(t, watcher, parent, last); !ok || p.Path != first.Path {
		t.Errorf("after Dequeue, Predecessor(%s) = %s %v, want %s", last.Name, p.Path, ok, first.Path)
	}
	if err := owner.Dequeue(opCtx(t), me); !errors.Is(err, backends.ErrNoNode) {
		t.Errorf("second Dequeue: %v, want ErrNoNode", err)
	}
}

// testPredecessorGone: Predecessor told which node just went answers as
// without it: after a plain Delete of that node it finds the live node
// before it, after a holder's Dequeue it finds none (etcd from the
// companion key the Dequeue left, ZooKeeper by listing), and a me that is
// gone is ErrNoNode either way. The companion is no child of the queue.
func testPredecessorGone(t *testing.T, e *env) {
	a, b := e.session(t), e.session(t)
	parent := e.p("gone")
	ensure(t, a, parent)
	q := []backends.Node{enqueue(t, a, parent, "ta"), enqueue(t, b, parent, "tb"),
		enqueue(t, a, parent, "ta"), enqueue(t, b, parent, "tb")}
	del(t, b, q[2].Path)
	if p, ok := predecessorAfter(t, b, parent, q[3], q[2].Path); !ok || p.Path != q[1].Path {
		t.Errorf("after a Delete of %s, Predecessor(%s, gone) = %s %v, want %s", q[2].Name, q[3].Name, p.Path, ok, q[1].Path)
	}
	if err := a.Dequeue(opCtx(t), q[0]); err != nil {
		t.Fatalf("Dequeue(%s): %v", q[0].Name, err)
	}
	if p, ok := predecessorAfter(t, a, parent, q[1], q[0].Path); ok {
		t.Errorf("after the holder's Dequeue, Predecessor(%s, gone) = %s, want none", q[1].Name, p.Path)
	}
	if got := children(t, a, parent); !slices.Equal(names(got), names([]backends.Node{q[1], q[3]})) {
		t.Errorf("Children = %v, want %v: the queue's own records are no children", names(got), names([]backends.Node{q[1], q[3]}))
	}
	del(t, a, q[1].Path)
	if _, _, err := a.Predecessor(opCtx(t), parent, q[1], q[0].Path); !errors.Is(err, backends.ErrNoNode) {
		t.Errorf("Predecessor with gone of a node deleted since: %v, want ErrNoNode", err)
	}
	if p, ok := predecessorAfter(t, a, parent, q[3], q[1].Path); ok {
		t.Errorf("with every node before it gone, Predecessor(%s, gone) = %s, want none", q[3].Name, p.Path)
	}
}
