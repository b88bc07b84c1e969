package recipetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
	"github.com/zkbench/zkbench/recipes/variants"
)

// electionEnv is one election subtest's environment and variant.
type electionEnv struct {
	*env
	v    variants.Variant[recipes.Election]
	next int
}

// newMember opens the session of the next candidate or observer.
func (e *electionEnv) newMember() *member {
	e.t.Helper()
	m := e.newMemberOn(fmt.Sprintf("c%d", e.next), nil)
	e.next++
	return m
}

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

func (c *latch) finished() bool { return recipe.Closed(c.done) }

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
	return e.list(e.path)
}

// nodesBecome waits until the election path holds exactly n children.
func (e *electionEnv) nodesBecome(n int) {
	e.t.Helper()
	e.eventually(settleBound, fmt.Sprintf("election path never held %d nodes", n), func() bool {
		return len(e.nodes()) == n
	})
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
