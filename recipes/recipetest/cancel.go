package recipetest

import (
	"context"
	"errors"
	"time"
)

// testCancelCleansUp: a waiter whose ctx is cancelled returns ctx's error
// promptly and leaves no node behind; the holder and the lock are unharmed,
// and the same Lock acquires again afterwards.
func testCancelCleansUp(e *env) {
	holder, waiter := e.newClient(), e.newClient()
	e.acquire(holder)
	holderNodes := e.heldNodes()

	armed := waiter.c.Snapshot().WatchesArmed
	ctx, cancel := context.WithCancel(context.Background())
	p := &pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.grant, p.err = waiter.lock.Acquire(ctx)
	}()
	e.waitQueued(waiter, armed, holderNodes+1)
	e.mustBeWaiting(p, "waiter behind a holder")
	cancelled := time.Now()
	cancel()
	e.wait(p, promptBound, "after its ctx was cancelled")
	if !errors.Is(p.err, context.Canceled) {
		e.t.Fatalf("cancelled Acquire returned %v, want context.Canceled", p.err)
	}
	e.t.Logf("cancelled Acquire returned after %v", time.Since(cancelled).Round(time.Millisecond))
	// The cleanup happened before Acquire returned: check at once, no settling.
	if names := e.children(); len(names) != holderNodes {
		e.t.Errorf("after cancel the lock path holds %q, want only the holder's %d node(s)", names, holderNodes)
	}

	e.release(holder)
	e.childrenBecome(0)
	g := e.acquire(waiter)
	if g.Token <= 0 {
		e.t.Errorf("token after re-acquire = %d", g.Token)
	}
	e.release(waiter)
	e.childrenBecome(0)
}
