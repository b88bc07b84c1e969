package naive

import (
	"context"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Semaphore is the counting semaphore with the herd left in: the queue
// lock's children watch (ChildrenLock), admitting the first K in line.
//
// Algorithm: Acquire creates an ephemeral sequential node under <path>,
// then lists <path>'s children with ChildrenW. If fewer than K nodes come
// before its own, it holds a permit; otherwise it sleeps until the
// children change and lists again. Release deletes the node. The first K
// nodes hold, so at most K hold at once, and grants go in queue order.
//
// Herd behaviour: every waiter watches the parent's children, so every
// change to the queue wakes every waiter: a release wakes all N-K waiters
// (one is let in, the rest wake for nothing), and so does every arrival
// and every cancelled waiter leaving. Each wake-up lists the whole queue,
// O(N) bytes, so a handoff costs O(N²) bytes on the wire.
//
// Token, leftovers and cancellation: as ChildrenLock's (the node's create
// revision, or its sequence number + 1 on ZooKeeper; the next call removes
// a node a failed call left). Tokens grow in queue order, which is grant
// order with one permit; with more, two waiters let in by one change may
// return in either order.
//
// A Semaphore is used by one goroutine on one session (see
// recipes.Semaphore).
type Semaphore struct {
	q       *recipe.Queue
	permits int
}

var _ recipes.Semaphore = (*Semaphore)(nil)

// NewSemaphore returns the children-watching semaphore named path with
// permits permits on session s, or an error matching recipes.ErrPermits if
// permits < 1. It makes no request. recipes.WithCleanupTimeout bounds the
// fresh context on which a cancelled Acquire removes its node (default
// 5s).
func NewSemaphore(s backends.Session, path string, permits int, opts ...recipes.Option) (*Semaphore, error) {
	if permits < 1 {
		return nil, fmt.Errorf("naive: semaphore %s with %d permits: %w", path, permits, recipes.ErrPermits)
	}
	return &Semaphore{q: recipe.NewQueue("naive", ErrHeld, s, path, recipes.NewOptions(opts...).CleanupTimeout), permits: permits}, nil
}

// Acquire queues this client and blocks until fewer than K nodes are
// ahead of its own, ctx is done or the session is lost; see
// ChildrenLock.Acquire for what cancelling and a lost session do.
func (m *Semaphore) Acquire(ctx context.Context) (recipes.Grant, error) {
	return m.q.Acquire(ctx, func(ctx context.Context, me backends.Node) (int, error) {
		return m.q.WaitChildren(ctx, me, m.admitted)
	})
}

// admitted is the semaphore's recipe.Stand: the first K nodes hold; any
// other waits behind the K-th node before its own.
func (m *Semaphore) admitted(children []backends.Node, me string) (backends.Node, recipe.Standing) {
	switch i := recipe.IndexOf(children, me); {
	case i < 0:
		return backends.Node{}, recipe.Gone
	case i < m.permits:
		return backends.Node{}, recipe.Holds
	default:
		return children[i-m.permits], recipe.Behind
	}
}

// Release deletes this client's node, waking every waiter; see
// ChildrenLock.Release.
func (m *Semaphore) Release(ctx context.Context) error { return m.q.Release(ctx) }
