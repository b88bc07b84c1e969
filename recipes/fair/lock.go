// Package fair holds zkbench's herd-free recipes, written once against
// backends.Session and run unchanged on ZooKeeper and etcd. Its lock is the
// ZooKeeper recipes page's (Curator's InterProcessMutex): queue on
// sequential nodes, watch only the predecessor.
package fair

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// ErrHeld is returned by Acquire on a lock this client already holds.
var ErrHeld = errors.New("fair: lock already held by this client")

// Lock is the herd-free fair lock.
//
// Algorithm: Acquire creates an ephemeral sequential node under <path> and
// lists <path>'s children without a watch. If its node is the lowest, it
// holds the lock. Otherwise it arms ExistsW on the node immediately before
// its own and sleeps; when that node goes it lists again (a predecessor that
// left the queue is not necessarily the holder). If the predecessor is
// already gone when ExistsW runs, it lists again at once. Release deletes the
// node.
//
// Herd behaviour: each waiter watches only its immediate predecessor, and
// each node is watched by at most one waiter, so a release wakes exactly one
// client: the next in line. A cancelled or expired waiter wakes only its own
// successor, which re-lists and watches the new predecessor. Grants are FIFO
// in sequence order. Requests per acquisition: create + list, plus exists +
// list for every wake-up; release: one delete. <path> is made (EnsurePath)
// on the Lock's first Acquire only, and again if a create finds it gone.
//
// Token: the node's create revision where the create reports it (etcd,
// where it is also Seq), else its sequence number + 1 (ZooKeeper, whose
// create cannot return the czxid without a read): no request either way.
// Grants go in sequence order, so it grows with every grant of the lock
// (within one life of <path>: the sequence restarts if it is removed).
//
// Leftovers: every node this Lock makes is named "lock-<tag>-...", where the
// tag is unique to the Lock. If a failed call could not remove its node
// (Acquire's cleanup delete or Release's delete and retry failed, say for
// want of a quorum) or a create's outcome is unknown, the node stays queued,
// owned by the live session, and every later waiter waits behind it. So the
// next Acquire or Release of this Lock first lists <path> and deletes the
// nodes carrying its tag, before it makes a new one, and a Lock that ever
// suspected a leftover also deletes, in every listing while it waits, any
// node of its own other than the one it waits with (a create the server
// applied late). Without a failure this costs no request. Until then a
// waiter queued behind such a node simply waits on it as on any
// predecessor, and wakes when it goes. The window left: a client that never
// calls its Lock again keeps its leftover node until its session ends (the
// workloads close every session at the end of a case), as does a leftover
// made by a create applied after the Lock's last listing.
//
// A Lock is used by one goroutine on one session (see recipes.Lock), and a
// session's leftovers are found only by the Lock that made them.
type Lock struct {
	q *recipe.Queue
}

var _ recipes.Lock = (*Lock)(nil)

// New returns the fair lock named path on session s. It makes no request.
// recipes.WithCleanupTimeout bounds the fresh context on which a create runs
// to completion and a cancelled Acquire removes its node (default 5s).
func New(s backends.Session, path string, opts ...recipes.Option) *Lock {
	return &Lock{q: recipe.NewQueue("fair", ErrHeld, s, path, recipes.NewOptions(opts...).CleanupTimeout)}
}

// Acquire queues this client and blocks until it is first in line, ctx is
// done or the session is lost.
//
// It first removes this Lock's leftover nodes, if an earlier call failed to
// (see Lock); if that fails, Acquire returns the error without queueing.
//
// Cancelling ctx stops the wait at once; the client's own node is deleted on
// a fresh context bounded by the cleanup timeout (a few seconds) before
// Acquire returns ctx's error, which wakes only the client queued behind it.
// If that delete fails too, the node is left to this Lock's next call. If the
// session ends while waiting, Acquire returns an error matching
// recipes.ErrLockLost and backends.ErrSessionLost, leaves the node to the
// server (which removes it with the session) and never reports a grant on a
// dead session.
func (l *Lock) Acquire(ctx context.Context) (recipes.Grant, error) {
	return l.q.Acquire(ctx, l.waitFirst)
}

// waitFirst lists the queue (no watch) until me is first, sleeping on the
// immediate predecessor in between, and counts the notifications consumed.
// A Lock that ever suspected a leftover deletes its own other nodes it sees.
func (l *Lock) waitFirst(ctx context.Context, me backends.Node) (wakeups int, err error) {
	for {
		children, err := l.q.S.Children(ctx, l.q.Path)
		if err != nil {
			return wakeups, err
		}
		if deleted, err := l.q.DeleteOwn(ctx, children, me.Name); err != nil {
			return wakeups, err
		} else if deleted {
			continue
		}
		i := recipe.IndexOf(children, me.Name)
		switch {
		case i < 0:
			return wakeups, recipe.LockLost(fmt.Errorf("own node %s is gone", me.Path))
		case i == 0:
			return wakeups, nil
		}
		woke, err := l.waitGone(ctx, children[i-1].Path)
		if err != nil {
			return wakeups, err
		}
		if woke {
			wakeups++
		}
	}
}

// waitGone watches the predecessor and returns once a notification arrives
// (woke) or the predecessor turns out to be gone already (not woke).
func (l *Lock) waitGone(ctx context.Context, pred string) (woke bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, _, events, err := l.q.S.ExistsW(wctx, pred)
	if err != nil || !exists {
		return false, err
	}
	return recipe.Await(ctx, l.q.S, events)
}

// Release deletes this client's node, waking only the next in line. It
// returns an error matching recipes.ErrLockLost if the session ended (the
// server already removed the node). If ctx ends first, the delete is retried
// on a fresh bounded context; if that fails too, the lock is no longer held
// and the node is left to this Lock's next call.
//
// If not held, Release returns recipes.ErrNotHeld after removing this Lock's
// leftover nodes, if an earlier call failed to (see Lock).
func (l *Lock) Release(ctx context.Context) error { return l.q.Release(ctx) }
