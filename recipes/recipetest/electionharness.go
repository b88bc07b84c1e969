package recipetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// electionEnv is one election subtest's backend, namespace and variant.
type electionEnv struct {
	t     *testing.T
	b     backends.Backend
	admin backends.Admin
	v     variants.Variant[recipes.Election]
	path  string
	next  int
}

// member is one simulated client of an election: its own session, counted
// by instrument (so native recipes are also tested through Unwrap).
type member struct {
	id  string
	raw backends.Session
	s   backends.Session
	c   *instrument.Counters
}

// newMember opens a session for one candidate or observer; it is closed when
// the test ends.
func (e *electionEnv) newMember() *member {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	raw, err := e.b.NewSession(ctx)
	if err != nil {
		e.t.Fatalf("NewSession: %v", err)
	}
	e.t.Cleanup(func() { _ = raw.Close() })
	c := &instrument.Counters{}
	m := &member{id: fmt.Sprintf("c%d", e.next), raw: raw, s: instrument.Wrap(raw, c), c: c}
	e.next++
	return m
}

func (m *member) events() int64 { return m.c.Snapshot().WatchEvents }
func (m *member) armed() int64  { return m.c.Snapshot().WatchesArmed }

// latch is a candidate with its Latch and, once started, its Await.
type latch struct {
	*member
	l      recipes.Latch
	done   chan struct{}
	lead   recipes.Leadership
	err    error
	cancel context.CancelFunc
}

func (e *electionEnv) newLatch() *latch {
	m := e.newMember()
	return &latch{member: m, l: e.v.New.Latch(m.s, e.path, m.id)}
}

// awaitTimeout bounds a candidate's Await: it waits through every
// failover before its own (each ending with quiet windows), so the bound is
// a whole test's, not one operation's (a loaded machine took 22 s to reach
// the fourth candidate of a Failover test). Each failover is bounded by
// elected's opTimeout.
const awaitTimeout = 3 * time.Minute

// awaitAsync starts Await under awaitTimeout in a goroutine.
func (c *latch) awaitAsync() {
	ctx, cancel := context.WithTimeout(context.Background(), awaitTimeout)
	c.done, c.cancel = make(chan struct{}), cancel
	go func() {
		defer close(c.done)
		c.lead, c.err = c.l.Await(ctx)
	}()
}

func (c *latch) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// closeLatch closes c's latch under opTimeout.
func (e *electionEnv) closeLatch(c *latch) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := c.l.Close(ctx); err != nil {
		e.t.Errorf("%s: Close: %v", c.id, err)
	}
	if c.cancel != nil {
		c.cancel()
	}
}

// elected waits until exactly one of cands has finished its Await, checks it
// succeeded and that, a quiet window later, no other finished, and returns it.
func (e *electionEnv) elected(cands []*latch) *latch {
	e.t.Helper()
	var winner *latch
	e.eventually(opTimeout, "no candidate was elected", func() bool {
		for _, c := range cands {
			if c.finished() {
				winner = c
				return true
			}
		}
		return false
	})
	if winner.err != nil {
		e.t.Fatalf("%s: Await: %v", winner.id, winner.err)
	}
	time.Sleep(quietWindow)
	for _, c := range cands {
		if c != winner && c.finished() {
			e.t.Fatalf("two leaders: %s and %s (err %v)", winner.id, c.id, c.err)
		}
	}
	return winner
}

// nodes lists the election path's children as Admin sees them.
func (e *electionEnv) nodes() []string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	names, err := e.admin.List(ctx, e.path)
	if err != nil && !errors.Is(err, backends.ErrNoNode) {
		e.t.Fatalf("List %s: %v", e.path, err)
	}
	return names
}

// count is nodes for goroutines other than the test's: it reports errors
// instead of failing.
func (e *electionEnv) count() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	names, err := e.admin.List(ctx, e.path)
	if errors.Is(err, backends.ErrNoNode) {
		err = nil
	}
	return len(names), err
}

// nodesBecome waits until the election path holds exactly n children.
func (e *electionEnv) nodesBecome(n int) {
	e.t.Helper()
	e.eventually(settleBound, fmt.Sprintf("election path never held %d nodes", n), func() bool {
		return len(e.nodes()) == n
	})
}

// eventually polls cond until it holds or bound passes, then fails with what.
func (e *electionEnv) eventually(bound time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("after %v: %s", bound, what)
		}
		time.Sleep(pollEvery)
	}
}

// leaderChecker records terms: it counts two leaders acting at once and
// tokens that do not grow from term to term.
type leaderChecker struct {
	mu        sync.Mutex
	acting    map[string]bool
	overlaps  int
	terms     []string
	lastToken int64
	badTokens []int64
}

// begin records that id started acting as leader with token (0: unknown).
func (x *leaderChecker) begin(id string, token int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.acting == nil {
		x.acting = map[string]bool{}
	}
	if len(x.acting) > 0 {
		x.overlaps++
	}
	x.acting[id] = true
	x.terms = append(x.terms, id)
	if token != 0 {
		if token <= x.lastToken {
			x.badTokens = append(x.badTokens, x.lastToken, token)
		}
		x.lastToken = token
	}
}

// end records that id stopped acting.
func (x *leaderChecker) end(id string) {
	x.mu.Lock()
	delete(x.acting, id)
	x.mu.Unlock()
}

func (x *leaderChecker) check(t *testing.T) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.overlaps != 0 {
		t.Errorf("%d times two leaders acted at once (terms %v)", x.overlaps, x.terms)
	}
	if len(x.badTokens) != 0 {
		t.Errorf("tokens did not grow (pairs last,next): %v", x.badTokens)
	}
}
