package backendtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

func timeAfter(d time.Duration) <-chan time.Time { return time.After(d) }

// contextWithCancel derives a watch context from t's, cancelled at t's end
// at the latest.
func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, cancel
}

func existsW(t *testing.T, ctx context.Context, s backends.Session, p string, want bool) <-chan backends.Event {
	t.Helper()
	ok, _, ch, err := s.ExistsW(ctx, p)
	if err != nil {
		t.Fatalf("ExistsW(%s): %v", p, err)
	}
	if ok != want {
		t.Fatalf("ExistsW(%s) = %v, want %v", p, ok, want)
	}
	if ch == nil {
		t.Fatalf("ExistsW(%s) returned a nil channel", p)
	}
	return ch
}

func childrenW(t *testing.T, ctx context.Context, s backends.Session, parent string) ([]backends.Node, <-chan backends.Event) {
	t.Helper()
	ns, ch, err := s.ChildrenW(ctx, parent)
	if err != nil {
		t.Fatalf("ChildrenW(%s): %v", parent, err)
	}
	if ch == nil {
		t.Fatalf("ChildrenW(%s) returned a nil channel", parent)
	}
	return ns, ch
}

func testExistsWDelete(t *testing.T, e *env) {
	owner, watcher := e.session(t), e.session(t)
	ensure(t, owner, e.ns)
	p := e.p("n")
	create(t, owner, p, nil)
	visible(t, watcher, p)

	ctx, _ := contextWithCancel(t)
	ch := existsW(t, ctx, watcher, p, true)
	quiet(t, ch, "ExistsW before any change")
	del(t, owner, p)
	wantEvent(t, nextEvent(t, ch, "ExistsW on delete"), backends.EventDeleted, p)
	closedWithin(t, ch, eventBound, "ExistsW after its event")
	// One-shot: a later create is not delivered on the spent channel (it
	// is closed; reading again must still say closed).
	create(t, owner, p, nil)
	closedWithin(t, ch, promptBound, "spent ExistsW after a new create")
}

func testExistsWCreate(t *testing.T, e *env) {
	owner, watcher := e.ownerAndWatcher(t, e.ns)
	p := e.p("later")

	ctx, _ := contextWithCancel(t)
	ch := existsW(t, ctx, watcher, p, false)
	quiet(t, ch, "ExistsW on a missing node before any change")
	create(t, owner, p, nil)
	wantEvent(t, nextEvent(t, ch, "ExistsW on create"), backends.EventCreated, p)
	closedWithin(t, ch, eventBound, "ExistsW after its event")
	del(t, owner, p)
	closedWithin(t, ch, promptBound, "spent ExistsW after a delete")
}

func testWatchCancel(t *testing.T, e *env) {
	parent := e.p("w")
	owner, watcher := e.ownerAndWatcher(t, parent)
	p := parent + "/n"

	ctx1, cancel1 := contextWithCancel(t)
	ch1 := existsW(t, ctx1, watcher, p, false)
	ctx2, cancel2 := contextWithCancel(t)
	_, ch2 := childrenW(t, ctx2, watcher, parent)
	cancel1()
	cancel2()
	closedWithin(t, ch1, promptBound, "ExistsW after its ctx was cancelled")
	closedWithin(t, ch2, promptBound, "ChildrenW after its ctx was cancelled")

	// The change the cancelled watches would have seen comes later; the
	// session must stay healthy and a fresh watch still works.
	create(t, owner, p, nil)
	visible(t, watcher, p)
	ctx3, _ := contextWithCancel(t)
	ch3 := existsW(t, ctx3, watcher, p, true)
	del(t, owner, p)
	wantEvent(t, nextEvent(t, ch3, "fresh ExistsW after cancelled ones"), backends.EventDeleted, p)
	select {
	case <-watcher.Done():
		t.Fatal("watcher session ended after cancelled watches")
	default:
	}
}

// noMissedLoops is how many times the read-then-change race is tried.
const noMissedLoops = 25

func testNoMissedDelete(t *testing.T, e *env) {
	// The change comes from another session right after the watch call
	// returns: a backend that arms its watch after the read, or
	// asynchronously, misses some of them.
	owner, watcher := e.session(t), e.session(t)
	ensure(t, owner, e.ns)
	for i := range noMissedLoops {
		p := e.p(fmt.Sprintf("n%d", i))
		create(t, owner, p, nil)
		visible(t, watcher, p)
		ctx, cancel := contextWithCancel(t)
		ch := existsW(t, ctx, watcher, p, true)
		del(t, owner, p)
		ev := nextEvent(t, ch, fmt.Sprintf("loop %d: ExistsW then delete", i))
		wantEvent(t, ev, backends.EventDeleted, p)
		cancel()
	}
}

func testNoMissedCreate(t *testing.T, e *env) {
	owner, watcher := e.ownerAndWatcher(t, e.ns)
	for i := range noMissedLoops {
		p := e.p(fmt.Sprintf("n%d", i))
		ctx, cancel := contextWithCancel(t)
		ch := existsW(t, ctx, watcher, p, false)
		create(t, owner, p, nil)
		ev := nextEvent(t, ch, fmt.Sprintf("loop %d: ExistsW then create", i))
		wantEvent(t, ev, backends.EventCreated, p)
		cancel()
	}
}

func testChildrenW(t *testing.T, e *env) {
	parent := e.p("kids")
	owner, watcher := e.ownerAndWatcher(t, parent)

	ctx, _ := contextWithCancel(t)
	ns, ch := childrenW(t, ctx, watcher, parent)
	if len(ns) != 0 {
		t.Fatalf("ChildrenW of an empty parent = %v", names(ns))
	}
	quiet(t, ch, "ChildrenW before any change")
	c := create(t, owner, parent+"/c1", nil)
	wantEvent(t, nextEvent(t, ch, "ChildrenW on child create"), backends.EventChildrenChanged, parent)
	closedWithin(t, ch, eventBound, "ChildrenW after its event")

	ns, ch = childrenW(t, ctx, watcher, parent)
	if got := names(ns); len(got) != 1 || got[0] != "c1" {
		t.Fatalf("ChildrenW after create = %v, want [c1]", got)
	}
	if ns[0].Path != c.Path {
		t.Errorf("ChildrenW child Path = %q, want %q", ns[0].Path, c.Path)
	}
	del(t, owner, c.Path)
	wantEvent(t, nextEvent(t, ch, "ChildrenW on child delete"), backends.EventChildrenChanged, parent)
	closedWithin(t, ch, eventBound, "ChildrenW after its event")
	create(t, owner, parent+"/c2", nil)
	closedWithin(t, ch, promptBound, "spent ChildrenW after another create")
}

func testChildrenWNoMissedChange(t *testing.T, e *env) {
	parent := e.p("kids")
	owner, watcher := e.ownerAndWatcher(t, parent)
	for i := range noMissedLoops {
		child := fmt.Sprintf("%s/c%d", parent, i)
		ctx, cancel := contextWithCancel(t)
		_, ch := childrenW(t, ctx, watcher, parent)
		create(t, owner, child, nil)
		wantEvent(t, nextEvent(t, ch, fmt.Sprintf("loop %d: ChildrenW then create", i)), backends.EventChildrenChanged, parent)
		cancel()

		ctx, cancel = contextWithCancel(t)
		eventually(t, eventBound, "watcher sees "+child, func() (bool, string) {
			ns := children(t, watcher, parent)
			return len(ns) == 1, fmt.Sprint(names(ns))
		})
		_, ch = childrenW(t, ctx, watcher, parent)
		del(t, owner, child)
		wantEvent(t, nextEvent(t, ch, fmt.Sprintf("loop %d: ChildrenW then delete", i)), backends.EventChildrenChanged, parent)
		cancel()
	}
}

func testChildrenWIgnoresGrandchildren(t *testing.T, e *env) {
	owner, watcher := e.session(t), e.session(t)
	parent := e.p("top")
	ensure(t, owner, parent+"/mid/low")
	dirVisible(t, watcher, parent)

	ctx, _ := contextWithCancel(t)
	_, ch := childrenW(t, ctx, watcher, parent)
	// Not a change to parent's list: a grandchild, and a sibling whose
	// name extends parent's (an etcd prefix watch on "top" without the
	// slash would see it).
	create(t, owner, parent+"/mid/low/x", nil)
	create(t, owner, parent+"/mid/y", nil)
	create(t, owner, e.p("topper"), nil)
	quiet(t, ch, "ChildrenW after grandchild and sibling creates")
	create(t, owner, parent+"/direct", nil)
	wantEvent(t, nextEvent(t, ch, "ChildrenW on a direct child"), backends.EventChildrenChanged, parent)
}
