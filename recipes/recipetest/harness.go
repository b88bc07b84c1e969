package recipetest

import (
	"context"
	"sync"
	"time"

	"github.com/zkbench/zkbench/backends"
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

// lockEnv is one lock subtest's environment and lock variant.
type lockEnv struct {
	*env
	v variants.Variant[variants.LockMaker]
	// nodes, if set, names the lock's nodes instead of the lock path's
	// children (a library that keeps them deeper: etcd's RWMutex).
	nodes func() []string
}

// client is one simulated client: a member with its own Lock.
type client struct {
	*member
	lock recipes.Lock
}

// newClient opens a member (its session wrapped in the instrument
// decorator, so native locks are also tested through Unwrap) and builds
// the variant's lock on it.
func (e *lockEnv) newClient() *client {
	e.t.Helper()
	return e.newClientOn(nil)
}

// newClientOn is newClient with wrap applied to the raw session, under the
// instrument decorator.
func (e *lockEnv) newClientOn(wrap func(backends.Session) backends.Session) *client {
	e.t.Helper()
	m := e.newMemberOn("", wrap)
	l, err := e.v.New(m.s, e.path)
	if err != nil {
		e.t.Fatalf("%s: New: %v", e.v.Name, err)
	}
	return &client{member: m, lock: l}
}

// newHolder opens a client that holds the lock (acquire).
func (e *lockEnv) newHolder() *client {
	e.t.Helper()
	c := e.newClient()
	e.acquire(c)
	return c
}

// queueBehind opens n clients and queues each in turn behind the lock's one
// holder node and the clients before it (enqueue): the waiters and their
// Acquires, in queue order.
func (e *lockEnv) queueBehind(n int) ([]*client, []*pending) {
	e.t.Helper()
	waiters := make([]*client, n)
	pends := make([]*pending, n)
	for i := range waiters {
		waiters[i] = e.newClient()
		pends[i] = e.enqueue(waiters[i], i+2)
	}
	return waiters, pends
}

// skipUnlessFIFO skips the test for a variant that does not promise FIFO
// order; the variant's name and why are the reason.
func (e *lockEnv) skipUnlessFIFO(why string) {
	e.t.Helper()
	if !e.v.FIFO {
		e.t.Skipf("%s %s", e.v.Name, why)
	}
}

// acquire acquires under opTimeout and fails the test on error.
func (e *lockEnv) acquire(c *client) recipes.Grant {
	e.t.Helper()
	return within(e.t, "Acquire", c.lock.Acquire)
}

// release releases under opTimeout and fails the test on error.
func (e *lockEnv) release(c *client) {
	e.t.Helper()
	withinDo(e.t, "Release", c.lock.Release)
}

// children lists the lock's nodes as the backend's Admin sees them (a
// path never made lists as empty).
func (e *lockEnv) children() []string {
	e.t.Helper()
	if e.nodes != nil {
		return e.nodes()
	}
	return e.list(e.path)
}

// heldNodes returns the number of nodes under the lock path while the lock
// is held and nobody waits: at least one. It polls until one shows, since on
// a ZooKeeper ensemble Admin may read from a server that has not applied the
// holder's create yet (reads are served by the server a client is
// connected to, not the leader).
func (e *lockEnv) heldNodes() int {
	e.t.Helper()
	var n int
	e.eventually(settleBound, "the held lock's node never showed under "+e.path, func() bool {
		n = len(e.children())
		return n > 0
	})
	return n
}

// childrenBecome waits until the lock has exactly n nodes.
func (e *lockEnv) childrenBecome(n int) {
	e.t.Helper()
	e.becomes(e.path, n, e.children)
}

// waitQueued waits until c is asleep in Acquire: its watch is armed (locks
// the instrument sees) or the lock path holds wantChildren nodes (native).
// armedBefore is c's WatchesArmed before its Acquire began.
func (e *lockEnv) waitQueued(c *client, armedBefore int64, wantChildren int) {
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

// queued is a lock held by one client with another asleep behind it.
type queued struct {
	holder, waiter *client
	held           recipes.Grant // the holder's
	p              *pending      // the waiter's Acquire
	nodes          int           // the held lock's nodes (heldNodes)
}

// holderAndWaiter makes a holder acquire the lock and a waiter queue
// behind it, asleep in an Acquire under opTimeout (p.cancel cancels it; so
// does the test's end).
func (e *lockEnv) holderAndWaiter() *queued {
	e.t.Helper()
	holder, waiter := e.newClient(), e.newClient()
	q := &queued{holder: holder, waiter: waiter, held: e.acquire(holder), nodes: e.heldNodes()}
	q.p = e.enqueue(waiter, q.nodes+1)
	e.mustBeWaiting(q.p, "waiter behind a holder")
	return q
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
func acquireAsync(c *client) *pending { return startAcquire(c.lock.Acquire) }

// startAcquire runs acquire under opTimeout in a goroutine.
func startAcquire(acquire func(context.Context) (recipes.Grant, error)) *pending {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	p := &pending{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		p.grant, p.err = acquire(ctx)
		p.ended = time.Now()
	}()
	return p
}

// enqueue starts c's Acquire (acquireAsync) and waits until c is asleep in
// it with the lock holding nodes nodes (see waitQueued). The Acquire is
// cancelled when the test ends, if not before.
func (e *lockEnv) enqueue(c *client, nodes int) *pending {
	e.t.Helper()
	return e.enqueueWith(c, nodes, func() *pending { return acquireAsync(c) })
}

// enqueueWith is enqueue with c's Acquire started by start.
func (e *lockEnv) enqueueWith(c *client, nodes int, start func() *pending) *pending {
	e.t.Helper()
	armed := c.armed()
	p := start()
	e.t.Cleanup(p.cancel)
	e.waitQueued(c, armed, nodes)
	return p
}

// wait waits up to bound for the Acquire to return.
func (e *lockEnv) wait(p *pending, bound time.Duration, what string) {
	e.t.Helper()
	select {
	case <-p.done:
	case <-time.After(bound):
		e.t.Fatalf("Acquire did not return within %v: %s", bound, what)
	}
}

// granted waits up to opTimeout for p's Acquire to return (wait; what names
// it) and fails the test unless it succeeded, as "<who>: <error>".
func (e *lockEnv) granted(p *pending, what, who string) {
	e.t.Helper()
	e.wait(p, opTimeout, what)
	if p.err != nil {
		e.t.Fatalf("%s: %v", who, p.err)
	}
}

// mustBeWaiting checks that p has not returned.
func (e *lockEnv) mustBeWaiting(p *pending, what string) {
	e.t.Helper()
	select {
	case <-p.done:
		e.t.Fatalf("%s: Acquire returned early: %v", what, p.err)
	default:
	}
}

// holdRounds has each of n clients, on a goroutine of its own, take the
// lock rounds times: acquire(i) under opTimeout, hold(i, grant) while it
// holds, release(i). A client stops at its first error, which fails the
// test.
func (e *lockEnv) holdRounds(n, rounds int, acquire func(ctx context.Context, i int) (recipes.Grant, error),
	hold func(i int, g recipes.Grant), release func(ctx context.Context, i int) error) {
	e.t.Helper()
	errs := concurrently(n, func(i int) error {
		for range rounds {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			g, err := acquire(ctx, i)
			if err == nil {
				hold(i, g)
				err = release(ctx, i)
			}
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	})
	for _, err := range errs {
		e.t.Errorf("client: %v", err)
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
