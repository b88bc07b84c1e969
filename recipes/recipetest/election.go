package recipetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
	"github.com/zkbench/zkbench/recipes/variants"
)

// electionCandidates is the size of the failover test: enough for the herd
// to show (N-1 notifications against 1), small enough to stay fast.
const electionCandidates = 4

// RunElectionSuite runs every election subtest for variant v on backend b:
// at most one leader, failover after the leader's session closes (with one
// wake-up per failover where herd-free and the whole herd where not), hand
// over on Close, cleanup after a cancelled Await, selector round-robin and
// session loss, and observers. A variant that does not support b's kind
// must fail every call with recipes.ErrUnsupported instead. Each subtest
// works in a fresh namespace removed when it ends. With only, just the
// subtests so named run (see pick).
func RunElectionSuite(t *testing.T, b backends.Backend, v variants.Variant[recipes.Election], only ...string) {
	subtests := []subtest[*electionEnv]{
		{"Failover", testFailover},
		{"CloseHandsOver", testCloseHandsOver},
		{"CancelCleansUp", testAwaitCancelCleansUp},
		{"SelectorRoundRobin", testSelectorRoundRobin},
		{"SelectorSessionLost", testSelectorSessionLost},
		{"Observer", testObserver},
	}
	if !v.Supports(b.Kind()) {
		subtests, only = []subtest[*electionEnv]{{"Unsupported", testUnsupported}}, nil
	}
	runSuite(t, b, "election", subtests, only, func(e *env) *electionEnv { return &electionEnv{env: e, v: v} })
}

// testFailover: N candidates await; one leads at a time. The leader's
// session is closed (after it stopped acting), its Lost channel closes, and
// exactly one other candidate takes over with a larger token, until every
// candidate has led. Herd-free variants deliver one notification per
// failover; herd-prone ones one to every waiting candidate. The instrument
// counts them for the variants whose requests it sees; the servers count
// them too (serverCounts): exactly one where herd-free, at least one per
// waiting candidate where not. For native the servers are the only witness.
func testFailover(e *electionEnv) {
	x := &leaderChecker{}
	srv := newServerCounts(e.t, e.b)
	armedBase := srv.armedSettled()
	cands := make([]*latch, electionCandidates)
	for i := range cands {
		cands[i] = e.newLatch()
		cands[i].awaitAsync()
		defer cands[i].cancel()
	}
	waiting := append([]*latch(nil), cands...)
	for len(waiting) > 0 {
		leader := e.elected(waiting)
		x.begin(leader.id, leader.lead.Token)
		if leader.lead.Lost == nil {
			e.t.Fatalf("%s: Leadership.Lost is nil", leader.id)
		}
		waiting = without(waiting, leader)
		var idle, serverBefore int64
		if len(waiting) > 0 {
			// The servers of the waiting may notify them of the last
			// failover (or arrival) after the winner's server did.
			caughtUp(e.env, waiting)
			if !e.v.ClientCounts {
				srv.asleep(armedBase, len(waiting))
			}
			idle = srv.notified()
		}
		e.settleWaiters(waiting) // ends with a quiet window
		before := make([]int64, len(waiting))
		for i, c := range waiting {
			before[i] = c.events()
		}
		if len(waiting) > 0 {
			serverBefore = srv.unchanged(idle)
		}
		x.end(leader.id)
		if err := leader.raw.Close(); err != nil {
			e.t.Fatalf("closing the leader's session: %v", err)
		}
		select {
		case <-leader.lead.Lost:
		case <-time.After(promptBound):
			e.t.Errorf("%s: Leadership.Lost still open %v after its session closed", leader.id, promptBound)
		}
		if len(waiting) == 0 {
			continue
		}
		next := e.elected(waiting)
		want := int64(len(waiting))
		if e.v.HerdFree {
			want = 1
		}
		woken := func() int64 {
			n := int64(0)
			for i, c := range waiting {
				n += c.events() - before[i]
			}
			return n
		}
		e.awaitWakeups(e.v.ClientCounts, srv, serverBefore, want, woken)
		if e.v.ClientCounts {
			if got := woken(); got != want {
				e.t.Errorf("failover to %s woke %d candidates, want %d (herd-free: %v)", next.id, got, want, e.v.HerdFree)
			}
			if e.v.HerdFree && next.lead.Wakeups != 1 {
				e.t.Errorf("%s: Leadership.Wakeups = %d, want 1", next.id, next.lead.Wakeups)
			}
		}
		got := srv.since(serverBefore)
		e.t.Logf("%s on %s: failover to %s, %d candidates waiting: the servers sent %d watch notifications", e.v.Name, e.b.Kind(), next.id, len(waiting), got)
		switch {
		case e.v.HerdFree && got != want:
			e.t.Errorf("failover to %s: the servers sent %d watch notifications, want %d (herd-free)", next.id, got, want)
		case !e.v.HerdFree && got < want:
			e.t.Errorf("failover to %s: the servers sent %d watch notifications, want at least %d (herd)", next.id, got, want)
		}
	}
	x.check(e.t)
	e.nodesBecome(0)
}

// settleWaiters waits until every waiting candidate is asleep on a watch
// (herd-prone candidates re-arm after every failover; a herd-free one holds
// one live watch on its predecessor), then a quiet window; native, whose
// watches the instrument does not see, only gets the window.
func (e *electionEnv) settleWaiters(waiting []*latch) {
	e.t.Helper()
	if e.v.ClientCounts {
		for _, c := range waiting {
			e.eventually(settleBound, c.id+" never armed a watch", func() bool { return c.armed() > c.events() })
		}
	}
	time.Sleep(quietWindow)
}

func without(cands []*latch, c *latch) []*latch {
	out := make([]*latch, 0, len(cands))
	for _, o := range cands {
		if o != c {
			out = append(out, o)
		}
	}
	return out
}

// testCloseHandsOver: Close ends the term at once (Lost closed), the waiting
// candidate takes over with a larger token, Await after Close fails with
// ErrClosed, and the last Close leaves nothing behind.
func testCloseHandsOver(e *electionEnv) {
	a, b := e.newLatch(), e.newLatch()
	a.awaitAsync()
	defer a.cancel()
	if e.elected([]*latch{a}) != a {
		e.t.Fatal("unreachable")
	}
	b.awaitAsync()
	defer b.cancel()
	time.Sleep(quietWindow)
	if b.finished() {
		e.t.Fatalf("%s elected while %s leads (err %v)", b.id, a.id, b.err)
	}
	e.closeLatch(a)
	if !recipe.Closed(a.lead.Lost) {
		e.t.Errorf("Leadership.Lost still open after Close returned")
	}
	if e.elected([]*latch{b}) != b {
		e.t.Fatal("unreachable")
	}
	if b.lead.Token <= a.lead.Token {
		e.t.Errorf("token %d after hand-over not above %d", b.lead.Token, a.lead.Token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), promptBound)
	defer cancel()
	if _, err := a.l.Await(ctx); !errors.Is(err, recipes.ErrClosed) {
		e.t.Errorf("Await after Close: %v, want ErrClosed", err)
	}
	if lead, err := b.l.Await(ctx); err != nil || lead.Token != b.lead.Token {
		e.t.Errorf("second Await of the leader: %+v, %v; want its term at once", lead, err)
	}
	e.closeLatch(b)
	e.nodesBecome(0)
}

// testAwaitCancelCleansUp: a waiting candidate whose ctx is cancelled
// returns ctx's error promptly and leaves no node behind; the leader is
// unharmed, and the same latch volunteers again later.
func testAwaitCancelCleansUp(e *electionEnv) {
	a, b := e.newLatch(), e.newLatch()
	a.awaitAsync()
	defer a.cancel()
	e.elected([]*latch{a})
	leaderNodes := len(e.nodes())
	b.awaitAsync()
	time.Sleep(quietWindow)
	e.cancelled("Await", b.cancel, b.done, &b.err)
	if names := e.nodes(); len(names) != leaderNodes {
		e.t.Errorf("after cancel the election holds %q, want the leader's %d node(s)", names, leaderNodes)
	}
	if recipe.Closed(a.lead.Lost) {
		e.t.Errorf("leader's term ended when a waiter cancelled")
	}
	e.closeLatch(a)
	b.awaitAsync()
	defer b.cancel()
	e.elected([]*latch{b})
	e.closeLatch(b)
	e.nodesBecome(0)
}

// testUnsupported: every call of a variant on a backend it does not support
// fails at once with recipes.ErrUnsupported.
func testUnsupported(e *electionEnv) {
	m := e.newMember()
	ctx, cancel := context.WithTimeout(context.Background(), promptBound)
	defer cancel()
	if _, err := e.v.New.Latch(m.s, e.path, m.id).Await(ctx); !errors.Is(err, recipes.ErrUnsupported) {
		e.t.Errorf("Latch.Await: %v, want ErrUnsupported", err)
	}
	err := e.v.New.Selector(m.s, e.path, m.id).Run(ctx, func(context.Context) error { return nil })
	if !errors.Is(err, recipes.ErrUnsupported) {
		e.t.Errorf("Selector.Run: %v, want ErrUnsupported", err)
	}
	if _, err := e.v.New.Observer(m.s, e.path).Leader(ctx); !errors.Is(err, recipes.ErrUnsupported) {
		e.t.Errorf("Observer.Leader: %v, want ErrUnsupported", err)
	}
	e.t.Logf("%s on %s: %v", e.v.Name, e.b.Kind(), err)
}
