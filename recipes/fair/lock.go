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
// Algorithm: Acquire queues an ephemeral sequential node under <path>
// (Session.Enqueue) and waits on the node just before its own: at start-up
// on the one the backend names without a request of its own (Node.Prev:
// ZooKeeper's sequence number minus one, etcd's queue tail read in the
// create's transaction), else on the one Session.Predecessor finds.
// Release removes the holder's node with Session.Dequeue, which the
// watcher sees as EventDataChanged on both backends (ZooKeeper: a multi
// that sets data, then deletes; etcd: the node deleted without its
// companion key): its predecessor was the holder, nothing can be left
// before a holder, and nothing is made later between the two, so the
// watcher holds the lock at once, with no request. Any other departure (a
// cancelled or expired waiter, a leftover removed) is EventDeleted: the
// watcher asks Predecessor again, naming the node that went (a predecessor
// that left the queue is not necessarily the holder), and holds the lock
// when there is none. If the predecessor is already gone when ExistsW
// runs, it asks at once, naming it: on etcd that request first checks
// whether it left by Dequeue (its companion stayed), O(1) server work.
//
// Herd behaviour: each waiter watches only its immediate predecessor, and
// each node is watched by at most one waiter, so a release wakes exactly one
// client: the next in line. A cancelled or expired waiter wakes only its own
// successor, which asks again and watches the new predecessor. Grants are
// FIFO in sequence order. Requests per acquisition: enqueue + exists (on
// Prev, both backends); a handoff adds nothing; each other wake-up adds
// predecessor + exists; release: one dequeue (one write).
//
// Bytes: every request of an acquisition by handoff is O(1) bytes on both
// backends (etcd's Predecessor is a range with limit 2), so neither the
// wake-ups nor the start-up burst grow with the queue on the wire. Server
// work: O(1) a waiter at start-up and a handoff on both (a handoff makes
// no request); on etcd only a wake-up after another departure walks the
// queue's keys in the server's index. Only a wake-up after a departure other than a release
// lists the queue on ZooKeeper (Predecessor): 14 bytes a waiter with Enqueue's bare
// sequence-number names, so each session's receive buffer still holds a
// whole listing. <path> is made (EnsurePath) on the Lock's first Acquire
// only, and again if a create finds it gone.
//
// Token: the node's create revision where the create reports it (etcd,
// where it is also Seq), else its sequence number + 1 (ZooKeeper, whose
// create cannot return the czxid without a read): no request either way.
// Grants go in sequence order, so it grows with every grant of the lock
// (within one life of <path>: the sequence restarts if it is removed).
//
// Leftovers: every node this Lock makes carries a tag unique to the Lock
// (Session.Enqueue), by which Session.Tagged finds them. If a failed call
// could not remove its node (Acquire's cleanup delete or Release's delete
// and retry failed, say for want of a quorum) or a create's outcome is
// unknown, the node stays queued, owned by the live session, and every
// later waiter waits behind it. So the next Acquire or Release of this
// Lock first finds (Tagged) and deletes the nodes carrying its tag, before
// it makes a new one, and a Lock that ever suspected a leftover also does
// so before every Predecessor while it waits, deleting any node of its own
// other than the one it waits with (a create the server applied late).
// Without a failure this costs no request; after one, Tagged costs a range
// on etcd and a listing and a read per waiter on ZooKeeper, at each of this
// Lock's wake-ups. Until then a waiter queued behind such a node simply
// waits on it as on any predecessor, and wakes when it goes. The window
// left: a client that never calls its Lock again keeps its leftover node
// until its session ends (the workloads close every session at the end of
// a case), as does a leftover made by a create applied after the Lock's
// last look.
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
	return &Lock{q: recipe.NewTaggedQueue("fair", ErrHeld, s, path, recipes.NewOptions(opts...).CleanupTimeout)}
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

// waitFirst sleeps on the node just before me until there is none, and
// counts the notifications consumed. At start-up it watches me.Prev where
// the backend names it; otherwise, and after every wake-up, it
// asks Session.Predecessor. A Lock that ever suspected a leftover first
// deletes its own other nodes.
func (l *Lock) waitFirst(ctx context.Context, me backends.Node) (wakeups int, err error) {
	pred, gone := me.Prev, ""
	for {
		if deleted, err := l.q.DeleteStrays(ctx, me); err != nil {
			return wakeups, err
		} else if deleted {
			pred = ""
		}
		if pred == "" {
			p, ok, err := l.q.S.Predecessor(ctx, l.q.Path, me, gone)
			switch {
			case errors.Is(err, backends.ErrNoNode):
				return wakeups, recipe.LockLost(fmt.Errorf("own node %s is gone", me.Path))
			case err != nil:
				return wakeups, err
			case !ok:
				return wakeups, nil
			}
			pred = p.Path
		}
		ev, woke, err := waitGone(ctx, l.q.S, pred)
		if err != nil {
			return wakeups, err
		}
		if woke {
			wakeups++
		}
		if ev == backends.EventDataChanged {
			// Dequeued: only the holder's Release does that, and nothing
			// is left before a holder nor made later between it and me,
			// so me is first. Nodes of mine made late are behind me.
			_, err := l.q.DeleteStrays(ctx, me)
			return wakeups, err
		}
		pred, gone = "", pred
	}
}

// waitGone watches the node pred and returns once a notification arrives
// (woke, and its type) or pred turns out to be gone already (not woke).
func waitGone(ctx context.Context, s backends.Session, pred string) (backends.EventType, bool, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, _, events, err := s.ExistsW(wctx, pred)
	if err != nil || !exists {
		return 0, false, err
	}
	return recipe.AwaitEvent(ctx, s, events)
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
