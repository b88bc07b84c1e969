package recipetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// The shared lock suite. A shared lock taken only to write is a lock, so
// every shared lock variant first passes the lock suite in write mode
// (WriteLock): exclusion, FIFO order, one wake-up a release where
// herd-free, cleanup after a cancel, session loss of a waiter and of the
// holder, and the leftovers of failed calls. Then its own subtests, mixing
// readers and writers (RunRWLockSuite).

// WriteLock is v taken to write only, as a lock variant for the lock
// suite. Writers are granted in queue order in every shared lock variant.
func WriteLock(v variants.Variant[variants.RWLockMaker]) variants.Variant[variants.LockMaker] {
	return writeLockOf(v, func(s backends.Session, path string) (recipes.Lock, error) {
		l, err := v.New(s, path)
		if err != nil {
			return nil, err
		}
		return modeLock{l: l, mode: recipes.Write}, nil
	})
}

// writeLockOf is v, a shared lock variant, as a lock variant whose locks
// newLock makes (v's lock taken to write), granted in queue order.
func writeLockOf[T any](v variants.Variant[T], newLock variants.LockMaker) variants.Variant[variants.LockMaker] {
	return variants.Variant[variants.LockMaker]{Name: v.Name, HerdFree: v.HerdFree, FIFO: true,
		ClientCounts: v.ClientCounts, Backends: v.Backends, New: newLock}
}

// LockSubtestsWithoutTokens are the lock suite's subtests that hold for a
// variant whose grants carry no fencing token (etcd's RWMutex); its
// cancellation and holder loss are checked by ReaderCancelCleansUp and
// ReaderSessionLost, which need none.
var LockSubtestsWithoutTokens = []string{"FIFO", "ReleaseWakes", "WaiterSessionLost"}

// modeLock is a shared lock taken in one mode, as a recipes.Lock.
type modeLock struct {
	l    recipes.RWLock
	mode recipes.Mode
}

func (m modeLock) Acquire(ctx context.Context) (recipes.Grant, error) {
	return m.l.Acquire(ctx, m.mode)
}
func (m modeLock) Release(ctx context.Context) error { return m.l.Release(ctx) }

// rwEnv is one shared lock subtest's backend, namespace and variant.
type rwEnv struct {
	*lockEnv
	rw variants.Variant[variants.RWLockMaker]
}

// rwClient is one client with its own session and shared lock.
type rwClient struct {
	*client
	rw recipes.RWLock
}

func (e *rwEnv) newRW() *rwClient {
	e.t.Helper()
	c := e.newClient() // the lock it builds is the write-mode one; rw is the same lock
	return &rwClient{client: c, rw: c.lock.(modeLock).l}
}

// acquireAsyncIn starts c's Acquire in mode under opTimeout.
func acquireAsyncIn(c *rwClient, mode recipes.Mode) *pending {
	return startAcquire(func(ctx context.Context) (recipes.Grant, error) { return c.rw.Acquire(ctx, mode) })
}

// enqueueIn is enqueue for c's Acquire in mode.
func (e *rwEnv) enqueueIn(c *rwClient, mode recipes.Mode, nodes int) *pending {
	e.t.Helper()
	return e.enqueueWith(c.client, nodes, func() *pending { return acquireAsyncIn(c, mode) })
}

// RunRWLockSuite runs the shared lock subtests for v on b (with only, just
// those named). Run the lock suite over WriteLock(v) beside it.
func RunRWLockSuite(t *testing.T, b backends.Backend, v variants.Variant[variants.RWLockMaker], only ...string) {
	subtests := []subtest[*rwEnv]{
		{"ReadersShare", testReadersShare},
		{"WriterExcludes", testWriterExcludes},
		{"WriterReleaseAdmitsReaders", testWriterReleaseAdmitsReaders},
		{"ReaderCancelCleansUp", testReaderCancelCleansUp},
		{"ReaderSessionLost", testReaderSessionLost},
	}
	runSuite(t, b, "rwlock", subtests, only, func(e *env) *rwEnv { return newRWEnv(e, v) })
}

// RunRWLockAsLockSuite runs the lock suite over v taken to write only
// (WriteLock), with etcd's RWMutex's deeper keys counted as its nodes.
func RunRWLockAsLockSuite(t *testing.T, b backends.Backend, v variants.Variant[variants.RWLockMaker], only ...string) {
	runLockSuite(t, b, "rwlock", func(e *env) *lockEnv { return newRWEnv(e, v).lockEnv }, only...)
}

// newRWEnv is the environment of one shared lock subtest in env.
func newRWEnv(env *env, v variants.Variant[variants.RWLockMaker]) *rwEnv {
	e := &lockEnv{env: env, v: WriteLock(v)}
	if v.Name == variants.Native {
		e.nodes = func() []string { return rwMutexKeys(e) }
	}
	return &rwEnv{lockEnv: e, rw: v}
}

// rwMutexKeys names the keys of etcd's RWMutex at e.path, which keeps them
// one level down: <path>/read/<n> and <path>/write/<n>.
func rwMutexKeys(e *lockEnv) []string {
	e.t.Helper()
	return e.listIn("read", "write")
}

// testReadersShare: readers hold the lock together, each granted while the
// others hold it; a writer then waits for every one of them.
func testReadersShare(e *rwEnv) {
	readers := make([]*rwClient, queueWaiters)
	for i := range readers {
		readers[i] = e.newRW()
		p := acquireAsyncIn(readers[i], recipes.Read)
		e.granted(p, "a reader while only readers hold the lock", fmt.Sprintf("reader %d", i))
	}
	w := e.newRW()
	p := e.enqueueIn(w, recipes.Write, queueWaiters+1)
	for _, r := range readers {
		e.mustBeWaiting(p, "a writer behind readers")
		e.release(r.client)
	}
	e.granted(p, "a writer once every reader released", "writer")
	e.release(w.client)
	e.childrenBecome(0)
}

// testWriterExcludes: readers and writers contend; a writer never holds
// with anyone, and readers do hold together at times.
func testWriterExcludes(e *rwEnv) {
	var (
		mu                 sync.Mutex
		readers, writers   int
		violations, shared int
	)
	enter := func(mode recipes.Mode) {
		mu.Lock()
		defer mu.Unlock()
		if mode == recipes.Write {
			if readers+writers > 0 {
				violations++
			}
			writers++
			return
		}
		if writers > 0 {
			violations++
		}
		readers++
		if readers > 1 {
			shared++
		}
	}
	exit := func(mode recipes.Mode) {
		mu.Lock()
		defer mu.Unlock()
		if mode == recipes.Write {
			writers--
		} else {
			readers--
		}
	}
	clients := make([]*rwClient, exclusionClients+2)
	for i := range clients {
		clients[i] = e.newRW()
	}
	modeOf := func(i int) recipes.Mode {
		if i%3 == 0 {
			return recipes.Write
		}
		return recipes.Read
	}
	e.holdRounds(len(clients), exclusionRounds,
		func(ctx context.Context, i int) (recipes.Grant, error) { return clients[i].rw.Acquire(ctx, modeOf(i)) },
		func(i int, _ recipes.Grant) {
			enter(modeOf(i))
			time.Sleep(2 * time.Millisecond)
			exit(modeOf(i))
		},
		func(ctx context.Context, i int) error { return clients[i].rw.Release(ctx) })
	if violations != 0 {
		e.t.Errorf("%d grants broke the shared lock (a writer with anyone, a reader with a writer)", violations)
	}
	e.t.Logf("%d reader grants shared the lock with another reader", shared)
	e.childrenBecome(0)
}

// testWriterReleaseAdmitsReaders: behind a writer wait K readers, then a
// writer, then a reader. The first writer's release admits the K readers
// at once, and not the two behind the second writer. Where the instrument
// sees the recipe, a herd-free lock wakes exactly the K readers it admits
// (each once: every notification was needed), a herd-prone one every
// waiter.
func testWriterReleaseAdmitsReaders(e *rwEnv) {
	holder := e.newRW()
	e.acquire(holder.client) // to write, under opTimeout
	type waiter struct {
		c    *rwClient
		mode recipes.Mode
		p    *pending
	}
	modes := make([]recipes.Mode, 0, queueWaiters+2)
	for range queueWaiters {
		modes = append(modes, recipes.Read)
	}
	modes = append(modes, recipes.Write, recipes.Read)
	waiters := make([]*waiter, len(modes))
	for i, m := range modes {
		w := &waiter{c: e.newRW(), mode: m}
		w.p = e.enqueueIn(w.c, m, i+2)
		waiters[i] = w
	}
	if e.rw.ClientCounts {
		e.eventually(settleBound, "waiters never settled on one armed watch each", func() bool {
			for _, w := range waiters {
				s := w.c.c.Snapshot()
				if s.WatchesArmed != s.WatchEvents+1 {
					return false
				}
			}
			return true
		})
	}
	time.Sleep(quietWindow)
	before := make([]int64, len(waiters))
	for i, w := range waiters {
		before[i] = w.c.c.Snapshot().WatchEvents
	}
	e.release(holder.client)
	for i := range queueWaiters {
		e.granted(waiters[i].p, "a reader behind the released writer", fmt.Sprintf("reader %d", i))
	}
	woken := func() (admitted, others int64) {
		for i, w := range waiters {
			d := w.c.c.Snapshot().WatchEvents - before[i]
			if i < queueWaiters {
				admitted += d
			} else {
				others += d
			}
		}
		return admitted, others
	}
	if e.rw.ClientCounts {
		// The waiters that stay out need only a notification, not a grant:
		// on a lagging member theirs comes after the readers are in.
		owed := int64(queueWaiters)
		if !e.rw.HerdFree {
			owed = int64(len(waiters))
		}
		e.eventually(settleBound, "the release's notifications never arrived", func() bool {
			admitted, others := woken()
			return admitted+others >= owed
		})
	}
	time.Sleep(quietWindow)
	e.mustBeWaiting(waiters[queueWaiters].p, "the second writer, behind the admitted readers")
	e.mustBeWaiting(waiters[queueWaiters+1].p, "the reader behind the second writer")
	if e.rw.ClientCounts {
		admitted, others := woken()
		switch {
		case e.rw.HerdFree && (admitted != queueWaiters || others != 0):
			e.t.Errorf("the release notified %d admitted readers and %d others, want %d and 0", admitted, others, queueWaiters)
		case !e.rw.HerdFree && admitted+others < int64(len(waiters)):
			e.t.Errorf("the herd-prone release notified %d waiters, want all %d", admitted+others, len(waiters))
		}
		e.t.Logf("release notified %d admitted readers and %d waiters that stayed out", admitted, others)
	}
	if e.rw.Name == variants.Fair {
		// The herd-free lock asks for the one node that keeps a waiter
		// out (Session.PredecessorOf: one bounded range on etcd) and never
		// lists the queue, before or after a wake-up.
		for i, w := range waiters {
			r := w.c.c.Snapshot().Requests
			if r["children"] != 0 || r["predecessor"] == 0 {
				e.t.Errorf("%s waiter %d: %d listings and %d predecessor queries, want none and at least one",
					w.mode, i, r["children"], r["predecessor"])
			}
		}
	}
	for i := range queueWaiters {
		e.release(waiters[i].c.client)
	}
	for _, w := range waiters[queueWaiters:] {
		e.granted(w.p, "the waiters behind the second writer, in turn", fmt.Sprintf("%s waiter", w.mode))
		e.release(w.c.client)
	}
	e.childrenBecome(0)
}

// testReaderCancelCleansUp: a reader waiting behind a writer whose ctx is
// cancelled returns promptly and leaves no node.
func testReaderCancelCleansUp(e *rwEnv) {
	holder, r := e.newRW(), e.newRW()
	e.acquire(holder.client) // to write, under opTimeout
	n := e.heldNodes()
	p := e.enqueueIn(r, recipes.Read, n+1)
	p.cancel()
	e.wait(p, promptBound, "a reader after its ctx was cancelled")
	if !errors.Is(p.err, context.Canceled) && !errors.Is(p.err, context.DeadlineExceeded) {
		e.t.Fatalf("cancelled read Acquire returned %v, want the ctx's error", p.err)
	}
	e.childrenBecome(n)
	e.release(holder.client)
	e.childrenBecome(0)
}

// testReaderSessionLost: a reader holding the lock whose session ends
// lets the writer behind it in.
func testReaderSessionLost(e *rwEnv) {
	r, w := e.newRW(), e.newRW()
	rp := acquireAsyncIn(r, recipes.Read)
	e.granted(rp, "a reader on a free lock", "reader")
	wp := e.enqueueIn(w, recipes.Write, 2)
	if err := r.s.Close(); err != nil {
		e.t.Fatalf("closing the reader's session: %v", err)
	}
	e.granted(wp, "the writer after the reader's session closed", "writer")
	e.release(w.client)
	e.childrenBecome(0)
}
