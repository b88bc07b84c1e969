package recipetest

import (
	"context"
	"errors"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// observed is an Observer.Next running in the background.
type observed struct {
	done chan struct{}
	info recipes.LeaderInfo
	err  error
}

func observeAsync(ctx context.Context, o recipes.Observer, after recipes.LeaderInfo) *observed {
	p := &observed{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.info, p.err = o.Next(ctx, after)
	}()
	return p
}

// testObserver: an observer sees no leader, then the first leader (its id
// and token), is not woken by candidates coming and going behind the
// leader, and learns the next leader after a failover with one notification
// where herd-free (two at most where not). The instrument counts the
// observer's notifications where it sees them; where herd-free the servers
// count the same (serverCounts): none for the churn, and two for the
// failover, one to the observer and one to the next candidate in line.
func testObserver(e *electionEnv) {
	srv := newServerCounts(e.t, e.b)
	om := e.newMember()
	o := e.v.New.Observer(om.s, e.path)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := o.Leader(ctx); !errors.Is(err, recipes.ErrNoLeader) {
		e.t.Fatalf("Leader of an empty election: %v, want ErrNoLeader", err)
	}

	first := observeAsync(ctx, o, recipes.LeaderInfo{})
	time.Sleep(quietWindow)
	a, b := e.newLatch(), e.newLatch()
	a.awaitAsync()
	defer a.cancel()
	e.elected([]*latch{a})
	e.observedAs(first, a)
	if got, err := o.Leader(ctx); err != nil || got != first.info {
		e.t.Errorf("Leader = %+v, %v; want %+v", got, err, first.info)
	}

	b.awaitAsync()
	defer b.cancel()
	next := observeAsync(ctx, o, first.info)
	if e.v.ClientCounts {
		// Both asleep on a watch before anything moves: the observer on
		// the leader, b on its predecessor (a watch armed after the
		// leader's end would find it gone and count no notification).
		e.eventually(settleBound, "the observer never armed a watch", func() bool { return om.armed() > om.events() })
		e.eventually(settleBound, b.id+" never armed a watch", func() bool { return b.armed() > b.events() })
	}
	idle := srv.notified()
	time.Sleep(quietWindow)
	before := om.events()
	serverBefore := srv.unchanged(idle)
	// Churn behind the leader: a candidate joins and withdraws.
	c := e.newLatch()
	c.awaitAsync()
	time.Sleep(quietWindow)
	c.cancel()
	<-c.done
	time.Sleep(quietWindow)
	if e.v.ClientCounts {
		if woke := om.events() - before; woke != 0 {
			e.t.Errorf("a candidate joining and leaving behind the leader woke the observer %d times", woke)
		}
	}
	churn := srv.since(serverBefore)
	if e.v.HerdFree && churn != 0 {
		e.t.Errorf("a candidate joining and leaving behind the leader: the servers sent %d watch notifications, want 0", churn)
	}
	serverBefore += churn
	select {
	case <-next.done:
		e.t.Fatalf("Next returned while the leader stayed: %+v, %v", next.info, next.err)
	default:
	}

	if err := a.raw.Close(); err != nil {
		e.t.Fatalf("closing the leader's session: %v", err)
	}
	e.elected([]*latch{b})
	e.observedAs(next, b)
	if e.v.ClientCounts {
		woke := om.events() - before
		limit := int64(2)
		if e.v.HerdFree {
			limit = 1
		}
		if woke < 1 || woke > limit {
			e.t.Errorf("a failover woke the observer %d times, want 1..%d", woke, limit)
		}
		e.t.Logf("%s observer: %d notification(s) for one failover", e.v.Name, woke)
	}
	if e.v.HerdFree {
		srv.atLeast(serverBefore, 2) // elected ended with a quiet window
		got := srv.since(serverBefore)
		e.t.Logf("%s on %s: one failover watched by an observer and the next candidate: the servers sent %d watch notifications", e.v.Name, e.b.Kind(), got)
		if leaked := nativeObserveLeaks(e); got < 2 || got > 2+leaked {
			e.t.Errorf("a failover: the servers sent %d watch notifications, want 2 (the observer and the next candidate) plus at most %d abandoned", got, leaked)
		}
	}
	e.closeLatch(b)
	e.nodesBecome(0)
}

// nativeObserveLeaks is how many notifications beyond its own the servers may
// send at a failover for abandoned watches of this test's observer: one per
// earlier Next (one, first's) for native on etcd, none otherwise.
// concurrency.Election.Observe, which native's Next starts and stops each
// time, hands over the leader it found before it arms its watch on the
// leader's key; when Next stops it meanwhile, clientv3 drops the watch's
// creation response without cancelling it on the server (watch.go: an
// abandoned stream in the resuming queue), and the server keeps it until it
// fires once, here, counted by the server and dropped by the client.
func nativeObserveLeaks(e *electionEnv) int64 {
	if e.v.Name == variants.Native && e.b.Kind() == backends.Etcd {
		return 1
	}
	return 0
}

// observedAs waits for p and checks it reports c's term.
func (e *electionEnv) observedAs(p *observed, c *latch) {
	e.t.Helper()
	select {
	case <-p.done:
	case <-time.After(opTimeout):
		e.t.Fatalf("Next did not report %s within %v", c.id, opTimeout)
	}
	if p.err != nil {
		e.t.Fatalf("Next: %v", p.err)
	}
	if p.info.ID != c.id || p.info.Token != c.lead.Token {
		e.t.Errorf("Next reported %+v, want {ID:%s Token:%d}", p.info, c.id, c.lead.Token)
	}
}
