package recipetest

import (
	"time"
)

// testReleaseWakes measures the herd directly: with K waiters asleep, one
// release must deliver exactly one watch notification for a herd-free lock
// and K (every waiter) for a herd-prone one. The instrument counts them on
// the clients, for the variants whose requests it sees. The servers count
// them too (serverCounts): exactly one for a herd-free lock, at least K for
// a herd-prone one, where a losing waiter's re-armed watch may also fire on
// the winner's create, which the server sends but the backend drops as
// older than the waiter's read. Native locks bypass the instrument, so for
// them the servers are the only witness: their watches armed tell that the
// waiters are asleep, their notifications sent check the herd-free label.
func testReleaseWakes(e *lockEnv) {
	srv := newServerCounts(e.t, e.b)
	holder := e.newHolder()
	armedBase := srv.armedSettled()
	waiters, pends := e.queueBehind(queueWaiters)
	// An arrival wakes a herd-prone waiter through the waiter's server,
	// which on a cluster may do so after the arrival was answered: the
	// notification would come during the quiet window below, or after it.
	caughtUp(e.env, waiters)
	if e.v.ClientCounts {
		// A herd-prone waiter is woken by each later waiter's arrival and
		// re-arms its watch; wait until every waiter is asleep on exactly
		// one live watch, or the release may find one between a wake-up
		// and its re-arm.
		e.eventually(settleBound, "waiters never settled on one armed watch each", func() bool {
			for _, w := range waiters {
				s := w.c.Snapshot()
				if s.WatchesArmed != s.WatchEvents+1 {
					return false
				}
			}
			return true
		})
	} else {
		srv.asleep(armedBase, queueWaiters)
	}
	idle := srv.notified()
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
	serverBefore := srv.unchanged(idle)

	e.release(holder)
	winner := e.nextGranted(pends)
	want := int64(1)
	if !e.v.HerdFree {
		want = queueWaiters
	}
	e.awaitWakeups(e.v.ClientCounts, srv, serverBefore, want, woken)
	if e.v.ClientCounts {
		if got := woken(); got != want {
			e.t.Errorf("one release woke %d waiters, want %d (herd-free: %v)", got, want, e.v.HerdFree)
		}
		if g := pends[winner].grant; g.Wakeups < 1 {
			e.t.Errorf("winner's Grant.Wakeups = %d, want >= 1", g.Wakeups)
		}
	}
	got := srv.since(serverBefore)
	e.t.Logf("%s on %s: one release, %d waiters: the servers sent %d watch notifications", e.v.Name, e.b.Kind(), queueWaiters, got)
	switch {
	case e.v.HerdFree && got != want:
		e.t.Errorf("one release: the servers sent %d watch notifications, want %d (herd-free)", got, want)
	case !e.v.HerdFree && got < want:
		e.t.Errorf("one release: the servers sent %d watch notifications, want at least %d (herd)", got, want)
	}

	// Drain the queue so nothing is left behind.
	e.release(waiters[winner])
	for range queueWaiters - 1 {
		e.release(waiters[e.nextGranted(pends)])
	}
	e.childrenBecome(0)
}

// awaitWakeups waits until a step's want wake-ups (a release's, a
// failover's) have arrived: at the clients (woken, where the instrument
// counts them: clientCounts) and at the servers (from serverBefore); then a
// quiet window for any beyond them. On a cluster a lagging member delivers
// its clients' wake-ups after the winner's.
func (e *env) awaitWakeups(clientCounts bool, srv *serverCounts, serverBefore, want int64, woken func() int64) {
	e.t.Helper()
	if clientCounts {
		e.eventually(settleBound, "the wake-ups never arrived", func() bool { return woken() >= want })
	}
	srv.atLeast(serverBefore, want)
	time.Sleep(quietWindow)
}
