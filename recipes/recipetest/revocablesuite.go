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

// The revocable shared lock suite. A revocable lock taken to write is a
// lock: it first passes the lock suite in write mode (RevocableLock; all
// but ReleaseWakes, whose count of armed watches the own-node watch
// changes: RevokeNotifiesHolder counts instead). Then its own subtests:
// the revoker asks, the holder alone is notified, consents and the next in
// line is granted; the forcing revoker takes the lock from a holder that
// does not let go, whose late writes only a fence rejects (the new
// holder's token is greater).

// RevocableLock is v's revocable lock taken to write only, as a lock
// variant for the lock suite.
func RevocableLock(v variants.Variant[variants.RevocableMaker]) variants.Variant[variants.LockMaker] {
	return writeLockOf(v, func(s backends.Session, path string) (recipes.Lock, error) {
		return revLock{l: v.New.Lock(s, path)}, nil
	})
}

// LockSubtestsOfRevocable are the lock suite's subtests a revocable lock
// runs (see RevocableLock).
var LockSubtestsOfRevocable = []string{"Exclusion", "TokenAndMisuse", "FIFO", "CancelCleansUp", "WaiterSessionLost",
	"HolderSessionLost", "CancelCleanupFails", "ReleaseFails", "UnknownCreate", "LateCreate", "ParentOnce"}

// revLock is a revocable lock taken to write, as a recipes.Lock.
type revLock struct{ l recipes.Revocable }

func (r revLock) Acquire(ctx context.Context) (recipes.Grant, error) {
	g, err := r.l.Acquire(ctx, recipes.Write)
	return g.Grant, err
}
func (r revLock) Release(ctx context.Context) error { return r.l.Release(ctx) }

// revEnv is one revocable subtest's backend, namespace and variant.
type revEnv struct {
	*lockEnv
	rv variants.Variant[variants.RevocableMaker]
}

type revClient struct {
	*client
	rev recipes.Revocable
}

func (e *revEnv) newRev() *revClient {
	e.t.Helper()
	c := e.newClient()
	return &revClient{client: c, rev: c.lock.(revLock).l}
}

// revoker opens a session of its own, counted, for v's revoker.
func (e *revEnv) revoker() (recipes.Revoker, *instrument.Counters) {
	e.t.Helper()
	return e.revokerOn(nil)
}

// revokerOn is revoker with wrap (if not nil) applied to the raw session,
// under the instrument decorator.
func (e *revEnv) revokerOn(wrap func(backends.Session) backends.Session) (recipes.Revoker, *instrument.Counters) {
	e.t.Helper()
	m := e.newMemberOn("revoker", wrap)
	return e.rv.New.Revoker(m.s), m.c
}

// gatedDeletes holds the Deletes of the session it wraps until open closes
// (or the call's ctx ends), and forwards backends.Updater, which a revoker
// needs to ask.
type gatedDeletes struct {
	backends.Session
	open <-chan struct{}
}

func (g *gatedDeletes) Delete(ctx context.Context, path string) error {
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Session.Delete(ctx, path)
}

func (g *gatedDeletes) Update(ctx context.Context, path string, data []byte) error {
	st, ok := g.Session.(backends.Updater)
	if !ok {
		return fmt.Errorf("recipetest: set %s: %T cannot set data: %w", path, g.Session, errors.ErrUnsupported)
	}
	return st.Update(ctx, path, data)
}

// enqueueWriter starts c's Acquire to write under opTimeout and waits
// until it armed both its watches (on the node before its own and on its
// own node). next is its grant, to read once p is done.
func (e *revEnv) enqueueWriter(c *revClient, who string) (p *pending, next *recipes.RevocableGrant) {
	e.t.Helper()
	next = new(recipes.RevocableGrant)
	armed := c.armed()
	p = startAcquire(func(ctx context.Context) (recipes.Grant, error) {
		g, err := c.rev.Acquire(ctx, recipes.Write)
		*next = g
		return g.Grant, err
	})
	e.t.Cleanup(p.cancel)
	e.eventually(settleBound, who+" never armed both its watches", func() bool {
		return c.armed() >= armed+2
	})
	return p, next
}

func (e *revEnv) acquire(c *revClient, mode recipes.Mode) recipes.RevocableGrant {
	e.t.Helper()
	return within(e.t, fmt.Sprintf("Acquire(%s)", mode), func(ctx context.Context) (recipes.RevocableGrant, error) {
		return c.rev.Acquire(ctx, mode)
	})
}

// RunRevocableSuite runs the revocable subtests for v on b (with only,
// just those named). Run the lock suite over RevocableLock(v) beside it.
func RunRevocableSuite(t *testing.T, b backends.Backend, v variants.Variant[variants.RevocableMaker], only ...string) {
	subtests := []subtest[*revEnv]{
		{"RevokeNotifiesHolder", testRevokeNotifiesHolder},
		{"RevokeReaders", testRevokeReaders},
		{"RevokeGone", testRevokeGone},
	}
	runSuite(t, b, "revocable", subtests, only, func(e *env) *revEnv {
		return &revEnv{lockEnv: &lockEnv{env: e, v: RevocableLock(v)}, rv: v}
	})
}

// testRevokeNotifiesHolder: a writer holds, another waits. The revoker
// finds the holder and asks; the holder is notified once and its Revoked
// closes; the waiter, whose exists watch is on the holder's node, is
// notified once too (a data change fires it: one wasted wake-up a
// revocation) and stays out until the holder lets go. With consent the
// holder's release ends the revocation. A forcing revoker whose grace
// passes first deletes the holder's node: the waiter is granted while the
// late holder has not let go and its session lives on, so only fencing can
// stop its late writes: the new holder's token is greater than the late
// holder's, the new holder was not asked to go, the revoker lists the new
// holder alone, and the late holder's Release reports the lock lost.
func testRevokeNotifiesHolder(e *revEnv) {
	holder, waiter := e.newRev(), e.newRev()
	held := e.acquire(holder, recipes.Write)
	p, next := e.enqueueWriter(waiter, "waiter")
	time.Sleep(quietWindow)
	// A forcing revoker deletes the holder's node once its grace has
	// passed, which fires the waiter's watch a second time; its Deletes
	// wait until the ask's notifications are counted (a loaded machine can
	// take longer than the grace to deliver and count them).
	gate := make(chan struct{})
	openGate := sync.OnceFunc(func() { close(gate) })
	e.t.Cleanup(openGate)
	rv, _ := e.revokerOn(func(s backends.Session) backends.Session { return &gatedDeletes{Session: s, open: gate} })
	hctx, hcancel := context.WithTimeout(context.Background(), opTimeout)
	defer hcancel()
	holders, err := rv.Holders(hctx, e.path)
	if err != nil || len(holders) != 1 || holders[0] != held.Node {
		e.t.Fatalf("Holders = %v, %v; want [%s]", holders, err, held.Node)
	}
	hBefore, wBefore := holder.c.Snapshot().WatchEvents, waiter.c.Snapshot().WatchEvents
	type revoked struct {
		forced bool
		err    error
	}
	done := make(chan revoked, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		f, err := rv.Revoke(ctx, held.Node)
		done <- revoked{f, err}
	}()
	select {
	case <-held.Revoked:
	case <-time.After(settleBound):
		e.t.Fatalf("the holder's Revoked still open %v after the ask", settleBound)
	}
	if d := holder.c.Snapshot().WatchEvents - hBefore; d != 1 {
		e.t.Errorf("the ask notified the holder %d times, want 1", d)
	}
	// The waiter behind the holder watches the holder's node, and an
	// exists watch fires on a data change: the ask wakes it too, for
	// nothing (it lists, finds the holder still there, and watches again).
	e.eventually(settleBound, "the waiter behind the holder was never notified of the ask", func() bool {
		return waiter.c.Snapshot().WatchEvents > wBefore
	}) // a forcing revoker's delete, the next notification, waits for the gate
	if d := waiter.c.Snapshot().WatchEvents - wBefore; d != 1 {
		e.t.Errorf("the ask notified the waiter behind the holder %d times, want 1 (its watch on the holder's node)", d)
	}
	openGate()
	if e.rv.Name == variants.Consent {
		e.mustBeWaiting(p, "a waiter while the holder cleans up")
		time.Sleep(quietWindow) // the holder's clean-up
		e.release(holder.client)
		r := <-done
		if r.err != nil || r.forced {
			e.t.Fatalf("Revoke with consent = forced %v, %v; want not forced, nil", r.forced, r.err)
		}
		e.granted(p, "the waiter after the holder let go", "waiter")
		e.release(waiter.client)
		e.childrenBecome(0)
		return
	}
	// Forced: the holder does not let go; the revoker's grace passes.
	r := <-done
	if r.err != nil || !r.forced {
		e.t.Fatalf("Revoke by force = forced %v, %v; want forced, nil", r.forced, r.err)
	}
	e.granted(p, "the waiter after the forced revocation", "waiter")
	// The waiter now holds while the late holder has not let go: what
	// stops the late holder's writes is the new holder's greater token
	// (a fenced resource rejects the older one), not its session, which
	// the revocation left alive.
	if next.Token <= held.Token {
		e.t.Errorf("the next holder's token %d is not greater than the revoked holder's %d: a fence could not reject the late holder's writes", next.Token, held.Token)
	}
	select {
	case <-held.Lost:
		e.t.Errorf("the revoked holder's session ended: a forced revocation takes the lock, not the session")
	default:
	}
	select {
	case <-next.Revoked:
		e.t.Errorf("the next holder's Revoked closed: the revocation named only the holder")
	default:
	}
	lctx, lcancel := context.WithTimeout(context.Background(), opTimeout)
	defer lcancel()
	// The revoker's own delete orders its listing after the waiter's create.
	if holders, err := rv.Holders(lctx, e.path); err != nil || len(holders) != 1 || holders[0] != next.Node {
		e.t.Errorf("Holders after the forced revocation = %v, %v; want [%s] (the waiter, not the revoked %s)", holders, err, next.Node, held.Node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := holder.rev.Release(ctx); !errors.Is(err, recipes.ErrLockLost) {
		e.t.Errorf("Release after a forced revocation: %v, want ErrLockLost", err)
	}
	e.release(waiter.client)
	e.childrenBecome(0)
}

// testRevokeReaders: two readers hold together and a writer waits; the
// revoker lists both as holders, revokes each, each lets go when asked,
// and the writer is granted.
func testRevokeReaders(e *revEnv) {
	r1, r2, w := e.newRev(), e.newRev(), e.newRev()
	g1, g2 := e.acquire(r1, recipes.Read), e.acquire(r2, recipes.Read)
	p, _ := e.enqueueWriter(w, "the writer")
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rv, _ := e.revoker()
	holders, err := rv.Holders(ctx, e.path)
	if err != nil || len(holders) != 2 {
		e.t.Fatalf("Holders = %v, %v; want the two readers", holders, err)
	}
	// Each reader lets go when asked, on a goroutine of its own (so it
	// reports with Errorf, not Fatalf); the goroutines end with ctx, and
	// the test waits for them.
	var readers sync.WaitGroup
	defer func() {
		cancel()
		readers.Wait()
	}()
	for _, rc := range []struct {
		c *revClient
		g recipes.RevocableGrant
	}{{r1, g1}, {r2, g2}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			select {
			case <-rc.g.Revoked:
			case <-ctx.Done():
				return
			}
			if err := rc.c.rev.Release(ctx); err != nil {
				e.t.Errorf("a reader's Release once asked to go: %v", err)
			}
		}()
	}
	for _, h := range holders {
		if _, err := rv.Revoke(ctx, h); err != nil {
			e.t.Fatalf("Revoke(%s): %v", h, err)
		}
	}
	e.granted(p, "the writer once both readers were revoked", "writer")
	e.release(w.client)
	e.childrenBecome(0)
}

// testRevokeGone: revoking a node that is gone is ErrNotHolder.
func testRevokeGone(e *revEnv) {
	rv, _ := e.revoker()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := rv.Revoke(ctx, e.path+"/nobody"); !errors.Is(err, recipes.ErrNotHolder) {
		e.t.Errorf("Revoke of a gone node: %v, want ErrNotHolder", err)
	}
}
