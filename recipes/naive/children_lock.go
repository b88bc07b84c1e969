package naive

import (
	"context"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// ChildrenLock is the queue lock with the herd left in: the variant seen in
// the wild when the "watch only your predecessor" step is skipped.
//
// Algorithm: Acquire creates an ephemeral sequential node under <path>, then
// lists <path>'s children with ChildrenW. If its node is the lowest, it holds
// the lock; otherwise it sleeps until the children change and lists again.
// Release deletes the node.
//
// Herd behaviour: every waiter watches the parent's children, so every change
// to the queue wakes every waiter: a release wakes all N-1 waiters (one makes
// progress, N-2 wake for nothing), and so does every arrival and every
// cancelled waiter leaving. Each wake-up costs a ChildrenW that lists the
// whole queue, O(N) bytes, so a handoff costs O(N^2) bytes on the wire.
// Grants are FIFO in sequence order, like recipes/fair.
//
// Token: as recipes/fair's, the node's create revision where the create
// reports it (etcd), else its sequence number + 1 (ZooKeeper): no request.
// It grows with every grant. <path> is made on the lock's first Acquire
// only, and again if a create finds it gone.
//
// Leftovers, as in recipes/fair: every node this lock makes is named
// "lock-<tag>-...", with a tag unique to the lock. A node that a failed call
// could not remove (or that a create of unknown outcome may have made) would
// hold up the queue while the session lives, so the next Acquire or Release
// first lists <path> and deletes the nodes carrying the tag, and a lock that
// ever suspected a leftover deletes any other node of its own it lists while
// waiting. Without a failure this costs no request. A client that never
// calls its lock again keeps its leftover until its session ends.
//
// A ChildrenLock is used by one goroutine on one session (see recipes.Lock).
type ChildrenLock struct {
	q *recipe.Queue
}

var _ recipes.Lock = (*ChildrenLock)(nil)

// NewChildren returns the children-watching lock named path on session s. It
// makes no request.
// recipes.WithCleanupTimeout bounds the fresh context on which a create runs
// to completion and a cancelled Acquire removes its node (default 5s).
func NewChildren(s backends.Session, path string, opts ...recipes.Option) *ChildrenLock {
	return &ChildrenLock{q: recipe.NewQueue("naive", ErrHeld, s, path, recipes.NewOptions(opts...).CleanupTimeout)}
}

// Acquire queues this client and blocks until it is first in line, ctx is
// done or the session is lost.
//
// It first removes this lock's leftover nodes, if an earlier call failed to
// (see ChildrenLock); if that fails, Acquire returns the error without
// queueing.
//
// Cancelling ctx stops the wait at once; the client's own node is deleted on
// a fresh context bounded by the cleanup timeout before Acquire returns ctx's
// error (if that fails too, the node is left to the lock's next call). If the
// session ends while waiting, Acquire returns an error matching
// recipes.ErrLockLost and backends.ErrSessionLost and leaves the node to the
// server, which removes it with the session.
func (l *ChildrenLock) Acquire(ctx context.Context) (recipes.Grant, error) {
	return l.q.Acquire(ctx, func(ctx context.Context, me backends.Node) (int, error) {
		return l.q.WaitChildren(ctx, me, recipe.FirstInLine)
	})
}

// Release deletes this client's node, waking every waiter. It returns an
// error matching recipes.ErrLockLost if the session ended. If ctx ends first,
// the delete is retried on a fresh bounded context; if that fails too, the
// lock is no longer held and the node is left to the lock's next call.
//
// If not held, Release returns recipes.ErrNotHeld after removing this lock's
// leftover nodes, if an earlier call failed to (see ChildrenLock).
func (l *ChildrenLock) Release(ctx context.Context) error { return l.q.Release(ctx) }
