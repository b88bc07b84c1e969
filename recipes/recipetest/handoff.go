package recipetest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// beforeGoingIdle runs hook before each Commit its session sends that
// goes idle on an unchanged backlog (a Check of the items' directory): the
// moment between a hand-off consumer's listing and its going idle, where a
// producer's put refuses it. fired counts them.
type beforeGoingIdle struct {
	flakySession
	hook  func()
	fired atomic.Int32
}

func (b *beforeGoingIdle) Commit(ctx context.Context, ops ...backends.Op) ([]backends.Node, error) {
	for _, op := range ops {
		if op.Kind == backends.OpCheck && strings.HasSuffix(op.Path, "/"+recipes.QueueItemsDir) {
			if b.fired.Add(1) <= maxRefusals {
				b.hook()
			}
		}
	}
	return b.flakySession.Commit(ctx, ops...)
}

// maxRefusals bounds the hooks a beforeGoingIdle runs, so that a consumer
// that tried to go idle on an unchanged backlog again and again (as the
// hand-off queue's did before it went idle unchecked) ends the test with a
// count above one rather than hang it.
const maxRefusals = 20

// refusedConsumer is a hand-off consumer each of whose going idle is
// preceded by hook (beforeGoingIdle), with the count of those, or false
// on another variant.
func (e *queueEnv) refusedConsumer(hook func()) (*queueClient, *atomic.Int32, bool) {
	if e.v.Name != variants.Handoff {
		return nil, nil, false
	}
	var fired *atomic.Int32
	c := e.newClientOn(func(s backends.Session) backends.Session {
		b := &beforeGoingIdle{flakySession: flakySession{Session: s}, hook: hook}
		fired = &b.fired
		return b
	})
	return c, fired, true
}

// testQueueIdleRefusedTakes: a hand-off consumer whose going idle a put
// refused (the put went to the backlog, nobody being idle) still takes
// that item, and leaves no idle node behind once it has.
func testQueueIdleRefusedTakes(e *queueEnv) {
	prod := e.newClient()
	c, fired, ok := e.refusedConsumer(func() { e.put(prod, "raced", 0) })
	if !ok {
		e.t.Skipf("%s: only the hand-off queue goes idle by a conditional Commit", e.v.Name)
	}
	if tk := e.take(c); string(tk.Data) != "raced" {
		e.t.Fatalf("take returned %q, want raced", tk.Data)
	}
	if n := fired.Load(); n != 1 {
		e.t.Fatalf("the consumer tried to go idle on an unchanged backlog %d times, want 1", n)
	}
	e.leftBecomes(0)
}

// testQueueIdleRefusedSleeps: a hand-off consumer whose going idle a put
// refused, and whose item another consumer took first, goes idle all the
// same, without trying again on an unchanged backlog (which a put before
// each try kept refusing: the race the consumers lost at 400 items/s):
// the next put is handed to it (were it put in the backlog, the consumer,
// asleep on its own node, would never see it).
func testQueueIdleRefusedSleeps(e *queueEnv) {
	prod, other := e.newClient(), e.newClient()
	srv := newServerCounts(e.t, e.b)
	// The hook runs on the Take's goroutine: no t.Fatal there.
	var hookErr error
	c, fired, ok := e.refusedConsumer(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := prod.p.Put(ctx, []byte("raced"), 0); err != nil {
			hookErr = fmt.Errorf("put raced: %w", err)
			return
		}
		tk, err := other.q.Take(ctx)
		if err == nil {
			err = other.q.Ack(ctx)
		}
		if err != nil || string(tk.Data) != "raced" {
			hookErr = fmt.Errorf("the other consumer's take: %q, %v; want raced", tk.Data, err)
		}
	})
	if !ok {
		e.t.Skipf("%s: only the hand-off queue goes idle by a conditional Commit", e.v.Name)
	}
	taken := sleepingTake(srv, c)
	e.put(prod, "next", 0)
	tk, err := taken()
	if hookErr != nil {
		e.t.Fatal(hookErr)
	}
	if err != nil || string(tk.Data) != "next" || tk.Wakeups != 1 {
		e.t.Fatalf("take: %q (%d wake-ups), %v; want next, handed over (1 wake-up)", tk.Data, tk.Wakeups, err)
	}
	if n := fired.Load(); n != 1 {
		e.t.Fatalf("the consumer tried to go idle on an unchanged backlog %d times, want 1", n)
	}
	withinDo(e.t, "ack next", c.q.Ack)
}
