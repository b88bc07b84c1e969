package naive

import (
	"context"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// RWLock is the shared (read/write) lock with the herd left in: the queue
// of the ZooKeeper recipes page's shared lock, but every waiter watches the
// lock's children instead of the one node that keeps it out.
//
// Algorithm: Acquire creates an ephemeral sequential node under <path>
// named for its mode ("lock-read-<tag>-..." or "lock-write-<tag>-...",
// recipe.Kind), then lists <path>'s children with ChildrenW. A reader
// holds the lock when no writer's node comes before its own, a writer when
// its node is the first. Otherwise it sleeps until the children change
// and lists again. Release deletes the node.
//
// Herd behaviour: every waiter, reader or writer, watches the children, so
// every change to the queue (a release, an arrival, a cancelled waiter
// leaving) wakes every waiter. A writer's release that admits the k
// readers behind it wakes all N-1 waiters: k of them are let in (the
// recipes page calls such a wake-up valid), the N-1-k others (the writers
// and the readers behind the next writer) wake for nothing; a reader's
// release wakes all N-1 and lets in at most one writer. Each wake-up lists
// the whole queue: O(N) bytes, O(N²) a handoff on the wire.
//
// Token, leftovers and cancellation: as ChildrenLock's (the node's create
// revision, or its sequence number + 1 on ZooKeeper; the next call removes
// a node a failed call left). A reader's token orders it among writers
// only: readers holding at once have different tokens.
//
// An RWLock is used by one goroutine on one session (see recipes.RWLock).
type RWLock struct {
	q *recipe.Queue
}

var _ recipes.RWLock = (*RWLock)(nil)

// NewRWLock returns the children-watching shared lock named path on
// session s. It makes no request. recipes.WithCleanupTimeout bounds the
// fresh context on which a cancelled Acquire removes its node (default 5s).
func NewRWLock(s backends.Session, path string, opts ...recipes.Option) *RWLock {
	return &RWLock{q: recipe.NewQueue("naive", ErrHeld, s, path, recipes.NewOptions(opts...).CleanupTimeout)}
}

// Acquire queues this client in mode and blocks until it holds the lock,
// ctx is done or the session is lost; see ChildrenLock.Acquire for what
// cancelling and a lost session do.
func (l *RWLock) Acquire(ctx context.Context, mode recipes.Mode) (recipes.Grant, error) {
	return l.q.AcquireAs(ctx, recipe.Kind(mode), func(ctx context.Context, me backends.Node) (int, error) {
		return l.q.WaitChildren(ctx, me, recipe.InMode(mode))
	})
}

// Release deletes this client's node, waking every waiter; see
// ChildrenLock.Release.
func (l *RWLock) Release(ctx context.Context) error { return l.q.Release(ctx) }
