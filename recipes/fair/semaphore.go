package fair

import (
	"context"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Semaphore is the herd-free counting semaphore: Curator's
// InterProcessSemaphoreV2 (a lock in front of the leases) on this
// package's Lock.
//
// Algorithm: Acquire first takes the gate, a Lock at <path>/gate, so that
// one waiter at a time, in queue order, deals with the leases. Holding it,
// it creates an ephemeral sequential lease under <path>/leases and lists
// the leases without a watch: if fewer than K come before its own, it
// holds a permit; otherwise it lists them again with ChildrenW and sleeps
// until they change (a holder's release or expiry), then lists again.
// Once it holds a permit it releases the gate, letting the next waiter
// in. Release deletes the lease. The first K leases hold, which needs no
// gate: the gate only keeps the other waiters off the leases' watch.
//
// Why not one queue where each waiter watches the node K places ahead of
// it: holders release in any order, and the first waiter must hear of
// every release. Watching the K-th node ahead, it misses a release of
// any other holder and waits, a permit idle, until that one node goes.
// Here the gate holder, the first waiter, watches all the leases, and it
// alone.
//
// Herd behaviour: the leases' children are watched by the gate holder
// only, and the gate is a Lock (each waiter watches its predecessor), so a
// release wakes one client, the gate holder, which takes the permit and
// hands the gate on, waking one more: two notifications an acquisition
// that waited, whatever N. A cancelled or expired waiter wakes at most its
// successor in the gate (and the gate holder, if it had a lease). Bytes:
// the gate costs what a Lock costs (O(1) a handoff on both backends); the
// gate holder lists the leases, at most K + 1 of them: O(K) bytes an
// acquisition, not O(N). Requests an acquisition: the gate's (enqueue,
// exists, dequeue), a lease create and a listing, and per wait a watched
// listing and a listing a wake-up; release: one delete.
//
// Token: the lease's create revision (etcd) or its sequence number + 1
// (ZooKeeper), as Lock's; leases are made one at a time under the gate,
// after the grant before them, so tokens grow with every grant.
//
// Cancelling: at the gate, as Lock.Acquire; holding the gate, the lease is
// deleted and the gate released on a fresh bounded context before Acquire
// returns ctx's error. Leftovers of failed calls (a lease or gate node
// whose delete failed) are removed by the next call, as Lock's.
//
// A Semaphore is used by one goroutine on one session (see
// recipes.Semaphore).
type Semaphore struct {
	gate    *Lock
	leases  *recipe.Queue
	path    string
	permits int
}

var _ recipes.Semaphore = (*Semaphore)(nil)

// SemaphorePaths are the directories a Semaphore at path keeps its nodes
// in: its gate's queue and its leases (persistent directories on
// ZooKeeper, nothing on etcd).
func SemaphorePaths(path string) (gate, leases string) { return path + "/gate", path + "/leases" }

// NewSemaphore returns the semaphore named path with permits permits on
// session s, or an error matching recipes.ErrPermits if permits < 1. It
// makes no request. recipes.WithCleanupTimeout bounds the fresh context
// on which cleanup runs (default 5s).
func NewSemaphore(s backends.Session, path string, permits int, opts ...recipes.Option) (*Semaphore, error) {
	if permits < 1 {
		return nil, fmt.Errorf("fair: semaphore %s with %d permits: %w", path, permits, recipes.ErrPermits)
	}
	gate, leases := SemaphorePaths(path)
	timeout := recipes.NewOptions(opts...).CleanupTimeout
	return &Semaphore{gate: New(s, gate, opts...), leases: recipe.NewQueue("fair", ErrHeld, s, leases, timeout),
		path: path, permits: permits}, nil
}

// Acquire waits for the gate, then for a permit, and releases the gate;
// see Semaphore for the steps and recipes.Semaphore for what cancelling
// and a lost session do. Grant.Wakeups counts the gate's notifications and
// the leases'.
func (m *Semaphore) Acquire(ctx context.Context) (recipes.Grant, error) {
	if _, held := m.leases.Held(); held {
		return recipes.Grant{}, fmt.Errorf("fair: acquire %s: %w", m.path, ErrHeld)
	}
	gated, err := m.gate.Acquire(ctx)
	if err != nil {
		return recipes.Grant{}, err
	}
	g, err := m.leases.Acquire(ctx, m.waitPermit)
	// Hand the gate on whatever happened: on a fresh context if ctx ended
	// (Release retries on one anyway). A release that fails leaves the
	// gate node to this semaphore's next call (Release tidies it), while
	// a lease granted is still held.
	if rerr := m.gate.Release(ctx); rerr != nil && err == nil && recipe.IsLost(rerr) {
		_ = m.leases.Release(ctx)
		err = rerr
	}
	if err != nil {
		return recipes.Grant{}, err
	}
	g.Wakeups += gated.Wakeups
	return g, nil
}

// waitPermit lists the leases until me is among the first K, sleeping on a
// children watch while it is not, and counts the notifications consumed.
// Only the gate holder runs it, so only it watches the leases.
func (m *Semaphore) waitPermit(ctx context.Context, me backends.Node) (wakeups int, err error) {
	watch := false // list without a watch first: a permit free at once arms none
	for {
		in, woke, err := m.look(ctx, me, watch)
		if err != nil || in {
			return wakeups, err
		}
		if woke {
			wakeups++
		}
		watch = !watch && !woke // after a wake-up, look again without a watch
	}
}

// look lists the leases (with a children watch if watch) and reports
// whether me holds a permit; with a watch and no permit it sleeps until
// the watch fires (woke).
func (m *Semaphore) look(ctx context.Context, me backends.Node, watch bool) (in, woke bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		leases []backends.Node
		events <-chan backends.Event
	)
	if watch {
		leases, events, err = m.leases.S.ChildrenW(wctx, m.leases.Path)
	} else {
		leases, err = m.leases.S.Children(ctx, m.leases.Path)
	}
	if err != nil {
		return false, false, err
	}
	if deleted, err := m.leases.DeleteOwn(ctx, leases, me.Name); deleted || err != nil {
		return false, false, err
	}
	switch i := recipe.IndexOf(leases, me.Name); {
	case i < 0:
		return false, false, recipe.LockLost(fmt.Errorf("own lease %s is gone", me.Path))
	case i < m.permits:
		return true, false, nil
	case !watch:
		return false, false, nil
	}
	woke, err = recipe.Await(ctx, m.leases.S, events)
	return false, woke, err
}

// Release deletes this client's lease, waking the gate holder if one
// waits, and removes a gate node an earlier call failed to (a failure of
// that is left to the next Acquire, which must remove it first). It
// returns an error matching recipes.ErrLockLost if the session ended; if
// not held, recipes.ErrNotHeld (after removing leftovers).
func (m *Semaphore) Release(ctx context.Context) error {
	err := m.leases.Release(ctx)
	if m.gate.q.Left.Pending() {
		_, _ = m.gate.q.Left.Tidy(ctx)
	}
	return err
}
