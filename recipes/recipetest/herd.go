package recipetest

import (
	"time"
)

// testReleaseWakes measures the herd directly: with K waiters asleep, one
// release must deliver exactly one watch notification for a herd-free lock
// and K (every waiter) for a herd-prone one. Counted by the instrument, so
// only for variants whose requests it sees.
func testReleaseWakes(e *env) {
	if !e.v.ClientCounts {
		e.t.Skipf("%s bypasses the instrument decorator: no client-side wake-up counts", e.v.Name)
	}
	holder := e.newClient()
	e.acquire(holder)
	waiters := make([]*client, queueWaiters)
	pends := make([]*pending, queueWaiters)
	for i := range waiters {
		waiters[i] = e.newClient()
		armed := waiters[i].c.Snapshot().WatchesArmed
		pends[i] = acquireAsync(waiters[i])
		e.waitQueued(waiters[i], armed, i+2)
	}
	// A herd-prone waiter is woken by each later waiter's arrival and re-arms
	// its watch; wait until every waiter is asleep on exactly one live watch,
	// or the release may find one between a wake-up and its re-arm.
	e.eventually(settleBound, "waiters never settled on one armed watch each", func() bool {
		for _, w := range waiters {
			s := w.c.Snapshot()
			if s.WatchesArmed != s.WatchEvents+1 {
				return false
			}
		}
		return true
	})
	time.Sleep(quietWindow)
	before := make([]int64, queueWaiters)
	for i, w := range waiters {
		before[i] = w.c.Snapshot().WatchEvents
	}
	woken := func() (n int64) {
		for i, w := range waiters {
			n += w.c.Snapshot().WatchEvents - before[i]
		}
		return n
	}

	e.release(holder)
	winner := e.nextGranted(pends)
	want := int64(1)
	if !e.v.HerdFree {
		want = queueWaiters
	}
	e.eventually(settleBound, "release did not wake the expected waiters", func() bool { return woken() >= want })
	time.Sleep(quietWindow)
	if got := woken(); got != want {
		e.t.Errorf("one release woke %d waiters, want %d (herd-free: %v)", got, want, e.v.HerdFree)
	}
	if g := pends[winner].grant; g.Wakeups < 1 {
		e.t.Errorf("winner's Grant.Wakeups = %d, want >= 1", g.Wakeups)
	}

	// Drain the queue so nothing is left behind.
	e.release(waiters[winner])
	for range queueWaiters - 1 {
		e.release(waiters[e.nextGranted(pends)])
	}
	e.childrenBecome(0)
}
