package recipetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// Bounds of the suite, generous for a loaded 2-core machine: a lock that
// needs more is broken, not slow.
const (
	// opTimeout bounds every step the suite expects to succeed.
	opTimeout = 20 * time.Second
	// promptBound: Acquire returns this soon after its ctx ends or its
	// session closes.
	promptBound = 3 * time.Second
	// settleBound: the server's view (children gone, a watch delivered)
	// catches up within this long.
	settleBound = 10 * time.Second
	// quietWindow: how long the suite listens to make sure nothing more
	// happens.
	quietWindow = 300 * time.Millisecond
	// pollEvery is the polling interval of every "eventually" check.
	pollEvery = 5 * time.Millisecond
)

// env is one subtest's backend, namespace and lock.
type env struct {
	t     *testing.T
	b     backends.Backend
	admin backends.Admin
	v     variants.Variant[variants.LockMaker]
	path  string
	// list, if set, names the lock's nodes instead of the lock path's
	// children (a library that keeps them deeper: etcd's RWMutex).
	list func() []string
}

// client is one simulated client: its own session, counted by instrument,
// and its own Lock.
type client struct {
	s    backends.Session
	c    *instrument.Counters
	lock recipes.Lock
}

// newClient opens a session, wraps it in the instrument decorator (so native
// locks are also tested through Unwrap) and builds the variant's lock. The
// session is closed when the test ends.
func (e *env) newClient() *client {
	e.t.Helper()
	return e.newClientOn(func(s backends.Session) backends.Session { return s })
}

// newClientOn is newClient with wrap applied to the raw session, under the
// instrument decorator.
func (e *env) newClientOn(wrap func(backends.Session) backends.Session) *client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	raw, err := e.b.NewSession(ctx)
	if err != nil {
		e.t.Fatalf("NewSession: %v", err)
	}
	e.t.Cleanup(func() { _ = raw.Close() })
	c := &instrument.Counters{}
	s := instrument.Wrap(wrap(raw), c)
	l, err := e.v.New(s, e.path)
	if err != nil {
		e.t.Fatalf("%s: New: %v", e.v.Name, err)
	}
	return &client{s: s, c: c, lock: l}
}

// acquire acquires under opTimeout and fails the test on error.
func (e *env) acquire(c *client) recipes.Grant {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	g, err := c.lock.Acquire(ctx)
	if err != nil {
		e.t.Fatalf("Acquire: %v", err)
	}
	return g
}

// release releases under opTimeout and fails the test on error.
func (e *env) release(c *client) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := c.lock.Release(ctx); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
}

// children lists the lock path's children as the backend's Admin sees them
// (a path never made lists as empty).
func (e *env) children() []string {
	e.t.Helper()
	if e.list != nil {
		return e.list()
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	names, err := e.admin.List(ctx, e.path)
	if err != nil && !errors.Is(err, backends.ErrNoNode) {
		e.t.Fatalf("List %s: %v", e.path, err)
	}
	return names
}

// eventually polls cond until it holds or bound passes, then fails with what.
func (e *env) eventually(bound time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("after %v: %s", bound, what)
		}
		time.Sleep(pollEvery)
	}
}

// heldNodes returns the number of nodes under the lock path while the lock
// is held and nobody waits: at least one. It polls until one shows, since on
// a ZooKeeper ensemble Admin may read from a server that has not applied the
// holder's create yet (reads are served by the server a client is
// connected to, not the leader).
func (e *env) heldNodes() int {
	e.t.Helper()
	var n int
	e.eventually(settleBound, "the held lock's node never showed under "+e.path, func() bool {
		n = len(e.children())
		return n > 0
	})
	return n
}

// childrenBecome waits until the lock path has exactly n children.
func (e *env) childrenBecome(n int) {
	e.t.Helper()
	deadline := time.Now().Add(settleBound)
	for {
		names := e.children()
		if len(names) == n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("after %v: %s has children %q, want %d", settleBound, e.path, names, n)
		}
		time.Sleep(pollEvery)
	}
}

// waitQueued waits until c is asleep in Acquire: its watch is armed (locks
// the instrument sees) or the lock path holds wantChildren nodes (native).
// armedBefore is c's WatchesArmed before its Acquire began.
func (e *env) waitQueued(c *client, armedBefore int64, wantChildren int) {
	e.t.Helper()
	if e.v.ClientCounts {
		e.eventually(settleBound, "waiter never armed a watch", func() bool {
			return c.c.Snapshot().WatchesArmed > armedBefore
		})
		return
	}
	e.eventually(settleBound, "waiter never queued", func() bool {
		return len(e.children()) >= wantChildren
	})
}

// pending is an Acquire running in the background.
type pending struct {
	done   chan struct{}
	grant  recipes.Grant
	err    error
	cancel context.CancelFunc
	ended  time.Time
}

// acquireAsync starts c's Acquire under opTimeout in a goroutine.
func acquireAsync(c *client) *pending {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	p := &pending{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		p.grant, p.err = c.lock.Acquire(ctx)
		p.ended = time.Now()
	}()
	return p
}

// wait waits up to bound for the Acquire to return.
func (e *env) wait(p *pending, bound time.Duration, what string) {
	e.t.Helper()
	select {
	case <-p.done:
	case <-time.After(bound):
		e.t.Fatalf("Acquire did not return within %v: %s", bound, what)
	}
}

// mustBeWaiting checks that p has not returned.
func (e *env) mustBeWaiting(p *pending, what string) {
	e.t.Helper()
	select {
	case <-p.done:
		e.t.Fatalf("%s: Acquire returned early: %v", what, p.err)
	default:
	}
}

// exclusion records critical sections: it fails on two holders at once and
// on a token that does not grow with every grant.
type exclusion struct {
	mu        sync.Mutex
	holders   int
	overlaps  int
	lastToken int64
	grants    int
	badTokens []int64
}

func (x *exclusion) enter(token int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.holders++
	if x.holders > 1 {
		x.overlaps++
	}
	if x.grants > 0 && token <= x.lastToken {
		x.badTokens = append(x.badTokens, x.lastToken, token)
	}
	x.lastToken = token
	x.grants++
}

func (x *exclusion) exit() {
	x.mu.Lock()
	x.holders--
	x.mu.Unlock()
}
