package recipetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// simpleWaiters is how many clients wait on the simple barrier.
const simpleWaiters = 3

// SuitePoll is the polling interval the suite gives the polling simple
// barrier (variants.SimpleBarriers(SuitePoll)).
const SuitePoll = 20 * time.Millisecond

// RunBarrierSuite runs the simple barrier subtests for variant v on backend
// b: Wait passes at once when the barrier is down, blocks while it is up,
// and every waiter returns when it is removed or when the setter's session
// ends; a second Set fails with backends.ErrNodeExists. A variant that
// watches (fair) notifies each waiter exactly once; the polling variant
// notifies nobody and reads more than once a waiter while it waits.
func RunBarrierSuite(t *testing.T, b backends.Backend, v variants.Variant[recipes.BarrierFactory]) {
	subtests := []subtest[*barrierEnv]{
		{"Remove", func(e *barrierEnv) { testSimpleBarrier(e, v, true) }},
		{"SetterSessionLost", func(e *barrierEnv) { testSimpleBarrier(e, v, false) }},
	}
	runSuite(t, b, "gate", subtests, nil, func(e *env) *barrierEnv { return &barrierEnv{env: e} })
}

func testSimpleBarrier(e *barrierEnv, v variants.Variant[recipes.BarrierFactory], remove bool) {
	newB := v.New
	polls := v.Name == variants.Polling
	ms := e.newParticipants(1 + simpleWaiters)
	setter := newB(ms[0].s, e.path)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := newB(ms[1].s, e.path).Wait(ctx); err != nil {
		e.t.Fatalf("Wait on a barrier that is down: %v", err)
	}
	if err := setter.Set(ctx); err != nil {
		e.t.Fatalf("Set: %v", err)
	}
	if err := newB(ms[1].s, e.path).Set(ctx); !errors.Is(err, backends.ErrNodeExists) {
		e.t.Errorf("second Set: %v, want ErrNodeExists", err)
	}
	waits := make([]*phase, simpleWaiters)
	armed := make([]int64, simpleWaiters)
	for i := range waits {
		w := newB(ms[1+i].s, e.path)
		armed[i] = ms[1+i].armed()
		waits[i] = startPhase(ctx, func(ctx context.Context) (recipes.Passage, error) {
			return recipes.Passage{}, w.Wait(ctx)
		})
	}
	// Every waiter is asleep on the barrier before it falls: a watcher has
	// armed its watch, a poller has read the barrier again (a fixed pause
	// could end before a loaded machine got them that far).
	for i := range waits {
		for deadline := time.Now().Add(settleBound); ; time.Sleep(pollEvery) {
			snap := ms[1+i].c.Snapshot()
			gets := snap.Requests["get"]
			if polls && gets >= 2 || !polls && snap.WatchesArmed > armed[i] {
				break
			}
			if waits[i].finished() {
				e.t.Fatalf("waiter %d returned from a barrier that is up, after %d reads and %d watches armed: %v",
					i, gets, snap.WatchesArmed-armed[i], waits[i].err)
			}
			if time.Now().After(deadline) {
				e.t.Fatalf("waiter %d not asleep on the barrier after %v: %d reads (%d unanswered), %d watches armed",
					i, settleBound, gets, snap.InFlight["get"], snap.WatchesArmed-armed[i])
			}
		}
	}
	time.Sleep(quietWindow)
	before := make([]int64, simpleWaiters)
	for i, ph := range waits {
		if ph.finished() {
			e.t.Fatalf("waiter %d passed a barrier that is up: %v", i, ph.err)
		}
		before[i] = ms[1+i].events()
	}
	lowered := time.Now()
	if remove {
		if err := setter.Remove(ctx); err != nil {
			e.t.Fatalf("Remove: %v", err)
		}
	} else if err := ms[0].raw.Close(); err != nil {
		e.t.Fatalf("closing the setter's session: %v", err)
	}
	for i, ph := range waits {
		select {
		case <-ph.done:
		case <-time.After(promptBound):
			e.t.Fatalf("waiter %d still waiting %v after the barrier fell", i, promptBound)
		}
		if ph.err != nil {
			e.t.Errorf("waiter %d: %v", i, ph.err)
		}
		want := int64(1)
		if polls {
			want = 0
		}
		if woke := ms[1+i].events() - before[i]; woke != want {
			e.t.Errorf("waiter %d was notified %d times, want %d", i, woke, want)
		}
	}
	e.t.Logf("all %d waiters passed %v after the barrier fell", simpleWaiters, time.Since(lowered).Round(time.Millisecond))
	e.listBecomes(e.path, 0)
}
