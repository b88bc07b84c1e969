// Package recipetest is the one lock suite every lock variant passes on every
// backend: at most one holder, growing fencing tokens, FIFO order where
// promised, one wake-up per release where herd-free (and the whole herd
// where not), cleanup after release and after a cancelled Acquire, the
// behaviour on session loss of a waiter and of the holder, and no node left
// behind by a call that failed (a cleanup or release delete that found no
// quorum, a create whose reply was lost). It runs against
// real servers (internal/testcluster); every client has its own session,
// wrapped in backends/instrument.
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

// Sizes of the suite: small, so it stays fast, but contended.
const (
	exclusionClients = 4
	exclusionRounds  = 6
	queueWaiters     = 3
)

// RunLockSuite runs every lock subtest for variant v on backend b. Each
// subtest works in a fresh namespace (testcluster.TestNamespace, resolved
// through b) removed when it ends. Subtests run one after the other. With
// only, just the subtests so named run (see pick).
func RunLockSuite(t *testing.T, b backends.Backend, v variants.Variant[variants.LockMaker], only ...string) {
	runLockSuite(t, b, "lock", func(e *env) *lockEnv { return &lockEnv{env: e, v: v} }, only...)
}

// runLockSuite is RunLockSuite with each subtest's lockEnv made by newE
// from a fresh env at name.
func runLockSuite(t *testing.T, b backends.Backend, name string, newE func(*env) *lockEnv, only ...string) {
	subtests := []subtest[*lockEnv]{
		{"Exclusion", testExclusion},
		{"TokenAndMisuse", testTokenAndMisuse},
		{"FIFO", testFIFO},
		{"ReleaseWakes", testReleaseWakes},
		{"CancelCleansUp", testCancelCleansUp},
		{"WaiterSessionLost", testWaiterSessionLost},
		{"HolderSessionLost", testHolderSessionLost},
		{"CancelCleanupFails", testCancelCleanupFails},
		{"ReleaseFails", testReleaseFails},
		{"UnknownCreate", testUnknownCreate},
		{"LateCreate", testLateCreate},
		{"ParentOnce", testParentOnce},
	}
	runSuite(t, b, name, subtests, only, newE)
}

// testExclusion: N clients, each on its own session, take the lock R times
// each; the checker sees at most one holder at a time and a token that grows
// with every grant; nothing is left under the lock path.
func testExclusion(e *lockEnv) {
	x := &exclusion{}
	clients := make([]*client, exclusionClients)
	for i := range clients {
		clients[i] = e.newClient()
	}
	e.holdRounds(len(clients), exclusionRounds,
		func(ctx context.Context, i int) (recipes.Grant, error) { return clients[i].lock.Acquire(ctx) },
		func(_ int, g recipes.Grant) {
			x.enter(g.Token)
			time.Sleep(time.Millisecond)
			x.exit()
		},
		func(ctx context.Context, i int) error { return clients[i].lock.Release(ctx) })
	if x.overlaps != 0 {
		e.t.Errorf("%d overlapping critical sections", x.overlaps)
	}
	if len(x.badTokens) != 0 {
		e.t.Errorf("tokens did not grow (pairs last,next): %v", x.badTokens)
	}
	if want := exclusionClients * exclusionRounds; x.grants != want {
		e.t.Errorf("%d grants, want %d", x.grants, want)
	}
	e.childrenBecome(0)
}

// testTokenAndMisuse: tokens grow across grants to different clients and to
// the same client; Release when not held and Acquire when held fail.
func testTokenAndMisuse(e *lockEnv) {
	a, b := e.newClient(), e.newClient()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := a.lock.Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		e.t.Errorf("Release before Acquire: %v, want ErrNotHeld", err)
	}
	var tokens []int64
	for _, c := range []*client{a, a, b, a} {
		g := e.acquire(c)
		if g.Lost == nil {
			e.t.Errorf("Grant.Lost is nil")
		}
		tokens = append(tokens, g.Token)
		e.release(c)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			e.t.Errorf("tokens %v do not grow", tokens)
			break
		}
	}
	e.acquire(a)
	short, cancelShort := context.WithTimeout(ctx, promptBound)
	defer cancelShort()
	if _, err := a.lock.Acquire(short); err == nil {
		e.t.Errorf("second Acquire while held succeeded")
	}
	e.release(a)
	if err := a.lock.Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		e.t.Errorf("second Release: %v, want ErrNotHeld", err)
	}
	e.childrenBecome(0)
}

// testFIFO: waiters that queued in a known order (each started after the
// previous is asleep) are granted in that order. Herd-free variants that the
// instrument sees must also wake each waiter exactly once.
func testFIFO(e *lockEnv) {
	e.skipUnlessFIFO("does not promise FIFO order")
	holder := e.newHolder()
	waiters, pends := e.queueBehind(queueWaiters)
	var order []int
	e.release(holder)
	for range waiters {
		i := e.nextGranted(pends)
		order = append(order, i)
		if i >= 0 {
			e.release(waiters[i])
		}
	}
	for i, got := range order {
		if got != i {
			e.t.Fatalf("grant order %v, want 0..%d", order, queueWaiters-1)
		}
	}
	if e.v.HerdFree && e.v.ClientCounts {
		for i, p := range pends {
			if p.grant.Wakeups != 1 {
				e.t.Errorf("waiter %d woke %d times, want 1", i, p.grant.Wakeups)
			}
		}
	}
	e.childrenBecome(0)
}

// nextGranted waits for the next of pends to return, checks it succeeded and
// returns its index.
func (e *lockEnv) nextGranted(pends []*pending) int {
	e.t.Helper()
	deadline := time.After(opTimeout)
	for {
		for i, p := range pends {
			select {
			case <-p.done:
				if p.err != nil {
					e.t.Fatalf("waiter %d: %v", i, p.err)
				}
				if p.cancel != nil {
					p.cancel()
					p.cancel = nil
					return i
				}
			default:
			}
		}
		select {
		case <-deadline:
			e.t.Fatalf("no waiter granted within %v", opTimeout)
		case <-time.After(pollEvery):
		}
	}
}
