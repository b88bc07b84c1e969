package fair

import (
	"context"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// RWLock is the ZooKeeper recipes page's shared (read/write) lock.
//
// Algorithm: Acquire creates an ephemeral sequential node under <path>
// named for its mode ("lock-read-<tag>-..." or "lock-write-<tag>-...",
// recipe.Kind, recipe.Queue.NameFor). A reader holds the lock when no
// writer's node comes before its own; otherwise it arms an exists watch on
// the nearest writer's node before its own. A writer holds the lock when
// its node is the first; otherwise it arms an exists watch on the node
// just before its own, whatever its mode. Each asks the backend for that
// one node (Session.PredecessorOf: among the writers' names for a reader,
// among all for a writer) rather than listing the queue. If the watched
// node is already gone it asks again at once; when the watch fires it asks
// again. Release deletes the node.
//
// Herd behaviour: a reader watches a writer, a writer its predecessor, so
// a node is watched by the readers between it and the next writer plus at
// most one writer. A writer's release wakes the readers queued right
// behind it, and every one of them is let in: the recipes page calls that
// valid, not a herd (only a "herd" released when a few can proceed is
// one). A reader's release wakes at most the one writer behind it, which
// is let in only if no earlier reader still holds: readers that release
// out of queue order wake that writer for nothing (it asks, and watches
// the reader now before it). A cancelled or expired waiter wakes only
// those that watched it, who ask and watch again. Grants to writers are
// FIFO; readers are let in together once no writer is ahead of them.
//
// Cost: requests per acquisition: create + predecessor, and per wait +
// exists and, per wake-up, + predecessor; release: one delete. On etcd
// every one is O(1) bytes (the predecessor is one range with limit 1 under
// the mode's name prefix, checking in the same transaction that the
// waiter's own node is there), as etcd's own RWMutex. ZooKeeper has no
// bounded or filtered child query, so there the predecessor is a listing
// of the queue, O(N) bytes with names of up to 51 bytes: the one cost this
// lock cannot make O(1) on ZooKeeper without a structure of its own (a
// reader would have to learn the nearest writer from nodes it reads one at
// a time).
//
// Token, leftovers and cancellation: as naive.ChildrenLock's (the node's
// create revision, or its sequence number + 1 on ZooKeeper; the next call
// removes a node a failed call left).
//
// An RWLock is used by one goroutine on one session (see recipes.RWLock).
type RWLock struct {
	q *recipe.Queue
}

var _ recipes.RWLock = (*RWLock)(nil)

// NewRWLock returns the shared lock named path on session s. It makes no
// request. recipes.WithCleanupTimeout bounds the fresh context on which a
// cancelled Acquire removes its node (default 5s).
func NewRWLock(s backends.Session, path string, opts ...recipes.Option) *RWLock {
	return &RWLock{q: recipe.NewQueue("fair", ErrHeld, s, path, recipes.NewOptions(opts...).CleanupTimeout)}
}

// Acquire queues this client in mode and blocks until it holds the lock,
// ctx is done or the session is lost. Cancelling ctx stops the wait at
// once; the client's node is deleted on a fresh bounded context before
// Acquire returns ctx's error (if that fails too, the node is left to this
// lock's next call). A lost session returns an error matching
// recipes.ErrLockLost and backends.ErrSessionLost.
func (l *RWLock) Acquire(ctx context.Context, mode recipes.Mode) (recipes.Grant, error) {
	return l.acquire(ctx, mode, nil)
}

// acquire is Acquire with start, if not nil, called with the new node
// before the wait begins (the revocable lock's own-node watch).
func (l *RWLock) acquire(ctx context.Context, mode recipes.Mode, start func(me backends.Node)) (recipes.Grant, error) {
	return l.q.AcquireAs(ctx, recipe.Kind(mode), func(ctx context.Context, me backends.Node) (int, error) {
		if start != nil {
			start(me)
		}
		blocker := "" // a writer waits behind any node
		if mode == recipes.Read {
			blocker = recipe.WriterPrefix
		}
		return l.q.WaitBehind(ctx, me, blocker)
	})
}

// Release deletes this client's node, waking those that watched it. It
// returns an error matching recipes.ErrLockLost if the session ended or
// the node is gone (a forced revocation deleted it). If ctx ends first, the
// delete is retried on a fresh bounded context; if that fails too, the
// lock is no longer held and the node is left to this lock's next call.
// If not held, Release returns recipes.ErrNotHeld after removing leftovers.
func (l *RWLock) Release(ctx context.Context) error { return l.q.Release(ctx) }

// held returns the node the lock is held by.
func (l *RWLock) held() (backends.Node, bool) { return l.q.Held() }
