package recipetest

// testCancelCleansUp: a waiter whose ctx is cancelled returns ctx's error
// promptly and leaves no node behind; the holder and the lock are unharmed,
// and the same Lock acquires again afterwards.
func testCancelCleansUp(e *lockEnv) {
	q := e.holderAndWaiter()
	holder, waiter, p, holderNodes := q.holder, q.waiter, q.p, q.nodes
	e.cancelled("Acquire", p.cancel, p.done, &p.err)
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
