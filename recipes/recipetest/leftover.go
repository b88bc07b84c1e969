package recipetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// errNoQuorum is what flakySession's failing deletes return: what a client
// sees from a cluster that lost its quorum.
var errNoQuorum = errors.New("recipetest: injected failure: no quorum")

// flakySession fails chosen calls of the session it wraps the way a cluster
// without a quorum does, deterministically: the next failDeletes Deletes
// fail without deleting, the next unknownCreates creates are made but
// reported as of unknown outcome (the reply was lost), and the next
// heldCreates creates are not made (yet) but reported as of unknown outcome
// (the request is stuck in the server, which may apply it later). The
// session itself stays alive, so whatever it owns stays on the server.
type flakySession struct {
	backends.Session
	failDeletes    atomic.Int32
	unknownCreates atomic.Int32
	heldCreates    atomic.Int32

	mu         sync.Mutex
	lastPrefix string // of the last CreateSequential
	lastTag    string // of the last Enqueue, if it came after
}

// take consumes one of n's remaining failures, if any.
func take(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

func (f *flakySession) Delete(ctx context.Context, path string) error {
	if take(&f.failDeletes) {
		return fmt.Errorf("delete %s: %w", path, errNoQuorum)
	}
	return f.Session.Delete(ctx, path)
}

// ChildrenVersion and Commit forward backends.Committer, unchanged.
func (f *flakySession) ChildrenVersion(ctx context.Context, parent string) ([]backends.Node, int64, error) {
	cm, ok := f.Session.(backends.Committer)
	if !ok {
		return nil, 0, fmt.Errorf("recipetest: %T cannot commit: %w", f.Session, errors.ErrUnsupported)
	}
	return cm.ChildrenVersion(ctx, parent)
}

func (f *flakySession) Commit(ctx context.Context, ops ...backends.Op) ([]backends.Node, error) {
	cm, ok := f.Session.(backends.Committer)
	if !ok {
		return nil, fmt.Errorf("recipetest: %T cannot commit: %w", f.Session, errors.ErrUnsupported)
	}
	return cm.Commit(ctx, ops...)
}

func (f *flakySession) Dequeue(ctx context.Context, me backends.Node) error {
	if take(&f.failDeletes) {
		return fmt.Errorf("dequeue %s: %w", me.Path, errNoQuorum)
	}
	return f.Session.Dequeue(ctx, me)
}

func (f *flakySession) Create(ctx context.Context, path string, data []byte) (backends.Node, error) {
	if take(&f.heldCreates) {
		return backends.Node{}, f.unknown()
	}
	return f.lostReply(f.Session.Create(ctx, path, data))
}

func (f *flakySession) CreateSequential(ctx context.Context, parent, prefix string, data []byte) (backends.Node, error) {
	f.mu.Lock()
	f.lastPrefix, f.lastTag = prefix, ""
	f.mu.Unlock()
	if take(&f.heldCreates) {
		return backends.Node{}, f.unknown()
	}
	return f.lostReply(f.Session.CreateSequential(ctx, parent, prefix, data))
}

func (f *flakySession) Enqueue(ctx context.Context, parent, tag string) (backends.Node, error) {
	f.mu.Lock()
	f.lastTag = tag
	f.mu.Unlock()
	if take(&f.heldCreates) {
		return backends.Node{}, f.unknown()
	}
	return f.lostReply(f.Session.Enqueue(ctx, parent, tag))
}

// applyLate makes, on the wrapped session, the sequential node a held create
// of the last prefix (or Enqueue tag) would have made: the server applies it
// only now.
func (f *flakySession) applyLate(ctx context.Context, parent string) (backends.Node, error) {
	f.mu.Lock()
	prefix, tag := f.lastPrefix, f.lastTag
	f.mu.Unlock()
	if tag != "" {
		return f.Session.Enqueue(ctx, parent, tag)
	}
	return f.Session.CreateSequential(ctx, parent, prefix, nil)
}

func (f *flakySession) unknown() error {
	return fmt.Errorf("create: %w (injected: no reply yet)", backends.ErrUnknownOutcome)
}

func (f *flakySession) lostReply(n backends.Node, err error) (backends.Node, error) {
	if err != nil || !take(&f.unknownCreates) {
		return n, err
	}
	return backends.Node{}, fmt.Errorf("create: %w (injected: the reply was lost)", backends.ErrUnknownOutcome)
}

// newFlakyClient is newClient on a flakySession. A variant whose requests
// bypass the session decorators has no failure to inject: its test is
// skipped.
func (e *lockEnv) newFlakyClient() (*client, *flakySession) {
	e.t.Helper()
	if !e.v.ClientCounts {
		e.t.Skipf("%s bypasses session decorators: no failure can be injected", e.v.Name)
	}
	var f *flakySession
	c := e.newClientOn(func(s backends.Session) backends.Session {
		f = &flakySession{Session: s}
		return f
	})
	return c, f
}

// acquireUnknown checks that c's Acquire, whose create its flakySession
// fails as said by how, returns backends.ErrUnknownOutcome.
func (e *lockEnv) acquireUnknown(c *client, how string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := c.lock.Acquire(ctx); !errors.Is(err, backends.ErrUnknownOutcome) {
		e.t.Fatalf("Acquire whose %s returned %v, want ErrUnknownOutcome", how, err)
	}
}

// testCancelCleanupFails: a queued waiter is cancelled and its cleanup delete
// fails (no quorum), so its node stays in the queue, owned by its live
// session; the client queued behind it waits on it. The waiter's next
// Acquire removes that node first: the client behind is granted, then the
// waiter, and nothing is left. Before leftovers were removed, every waiter
// queued behind the node forever.
func testCancelCleanupFails(e *lockEnv) {
	e.skipUnlessFIFO("has no queue: a waiter makes no node")
	holder := e.newHolder()
	waiter, flaky := e.newFlakyClient()
	p := e.enqueue(waiter, 2)
	behind := e.newClient()
	pb := e.enqueue(behind, 3)

	flaky.failDeletes.Store(1)
	e.cancelled("Acquire", p.cancel, p.done, &p.err)
	if names := e.children(); len(names) != 3 {
		e.t.Fatalf("after a cancel whose cleanup failed the lock path holds %q, want the holder's, the "+
			"cancelled waiter's and the next waiter's node", names)
	}
	e.release(holder)
	time.Sleep(quietWindow)
	e.mustBeWaiting(pb, "waiter queued behind the cancelled waiter's leftover node")

	again := acquireAsync(waiter)
	defer again.cancel()
	pends := []*pending{pb, again}
	if first := e.nextGranted(pends); first != 0 {
		e.t.Fatalf("the cancelled waiter's next Acquire was granted before the client queued ahead of it")
	}
	e.release(behind)
	e.nextGranted(pends)
	e.release(waiter)
	e.childrenBecome(0)
}

// testReleaseFails: the holder's Release fails (its delete and the retry,
// no quorum), so its node stays, owned by its live session, and the waiter
// stays asleep. The holder's next call, a Release on a lock it no longer
// holds, removes the node: it returns ErrNotHeld and the waiter is granted.
func testReleaseFails(e *lockEnv) {
	holder, flaky := e.newFlakyClient()
	e.acquire(holder)
	waiter := e.newClient()
	pw := e.enqueue(waiter, 2)

	flaky.failDeletes.Store(2)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := holder.lock.Release(ctx); !errors.Is(err, errNoQuorum) {
		e.t.Fatalf("Release with every delete failing returned %v, want the injected failure", err)
	}
	time.Sleep(quietWindow)
	e.mustBeWaiting(pw, "waiter behind a holder whose Release failed")

	if err := holder.lock.Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		e.t.Fatalf("second Release: %v, want ErrNotHeld", err)
	}
	e.granted(pw, "after the failed holder's next call", "waiter behind a failed Release")
	e.release(waiter)
	e.childrenBecome(0)
	e.acquire(holder)
	e.release(holder)
	e.childrenBecome(0)
}

// testUnknownCreate: a create lands but its reply is lost, so Acquire fails
// (backends.ErrUnknownOutcome) while its node stays, owned by the live
// session, and the next client waits behind it. The failed client's next
// Acquire finds that node by its tag and removes it first: both clients are
// granted in turn and nothing is left.
func testUnknownCreate(e *lockEnv) {
	failed, flaky := e.newFlakyClient()
	flaky.unknownCreates.Store(1)
	e.acquireUnknown(failed, "create reply was lost")
	if names := e.children(); len(names) != 1 {
		e.t.Fatalf("after a create of unknown outcome the lock path holds %q, want its node", names)
	}
	other := e.newClient()
	po := e.enqueue(other, 2)
	time.Sleep(quietWindow)
	e.mustBeWaiting(po, "client behind a node of unknown outcome")

	again := acquireAsync(failed)
	defer again.cancel()
	pends := []*pending{po, again}
	clients := []*client{other, failed}
	first := e.nextGranted(pends)
	if e.v.FIFO && first != 0 {
		e.t.Errorf("the failed client's next Acquire was granted before the client queued ahead of it")
	}
	e.release(clients[first])
	e.release(clients[e.nextGranted(pends)])
	e.childrenBecome(0)
}

// testLateCreate: a create stuck in the server fails Acquire
// (backends.ErrUnknownOutcome) and makes nothing, so the client's next
// Acquire finds nothing to remove and queues behind the holder. Then the
// server applies the stuck create: a node of the client's, behind its live
// one, that a later client queues behind. The client, woken by the holder's
// release, sees that node in its listing and removes it before it holds:
// after it releases, the later client is granted and nothing is left.
func testLateCreate(e *lockEnv) {
	e.skipUnlessFIFO("has no queue: a late create is an ordinary contender")
	holder := e.newHolder()
	late, flaky := e.newFlakyClient()
	flaky.heldCreates.Store(1)
	e.acquireUnknown(late, "create is stuck")
	pl := e.enqueue(late, 2)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n, err := flaky.applyLate(ctx, e.path)
	if err != nil {
		e.t.Fatalf("applying the stuck create: %v", err)
	}
	other := e.newClient()
	po := e.enqueue(other, 4)

	e.release(holder)
	pends := []*pending{pl, po}
	if first := e.nextGranted(pends); first != 0 {
		e.t.Fatalf("the client queued behind a late node was granted first")
	}
	for _, name := range e.children() {
		if name == n.Name {
			e.t.Errorf("late node %s still queued after its client was granted", name)
		}
	}
	e.release(late)
	e.nextGranted(pends)
	e.release(other)
	e.childrenBecome(0)
}
