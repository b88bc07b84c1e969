// Package fair holds zkbench's herd-free recipes, written once against
// backends.Session and run unchanged on ZooKeeper and etcd. Its lock is the
// ZooKeeper recipes page's (Curator's InterProcessMutex): queue on
// sequential nodes, watch only the predecessor.
package fair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// ErrHeld is returned by Acquire on a lock this client already holds.
var ErrHeld = errors.New("fair: lock already held by this client")

// seqPrefix starts the name of every waiter's sequential node.
const seqPrefix = "lock-"

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
// list for every wake-up; release: one delete.
//
// Token: the node's create revision (ZooKeeper czxid, etcd create revision,
// which on etcd is also Seq), read with one Get in the rare case the create
// did not report it. It grows with every grant.
//
// A Lock is used by one goroutine on one session (see recipes.Lock).
type Lock struct {
	s       backends.Session
	path    string
	timeout time.Duration
	me      backends.Node
	held    bool
}

var _ recipes.Lock = (*Lock)(nil)

// New returns the fair lock named path on session s. It makes no request.
// recipes.WithCleanupTimeout bounds the fresh context on which a create runs
// to completion and a cancelled Acquire removes its node (default 5s).
func New(s backends.Session, path string, opts ...recipes.Option) *Lock {
	return &Lock{s: s, path: path, timeout: recipes.NewOptions(opts...).CleanupTimeout}
}

// Acquire queues this client and blocks until it is first in line, ctx is
// done or the session is lost.
//
// Cancelling ctx stops the wait at once; the client's own node is deleted on
// a fresh context bounded by the cleanup timeout (a few seconds) before
// Acquire returns ctx's error, which wakes only the client queued behind it.
// If the session ends while waiting, Acquire returns an error matching
// recipes.ErrLockLost and backends.ErrSessionLost, leaves the node to the
// server (which removes it with the session) and never reports a grant on a
// dead session.
func (l *Lock) Acquire(ctx context.Context) (recipes.Grant, error) {
	if l.held {
		return recipes.Grant{}, fmt.Errorf("fair: acquire %s: %w", l.path, ErrHeld)
	}
	if err := l.s.EnsurePath(ctx, l.path); err != nil {
		return recipes.Grant{}, l.fail(err)
	}
	me, err := recipe.Create(ctx, l.s, l.timeout, func(c context.Context) (backends.Node, error) {
		return l.s.CreateSequential(c, l.path, seqPrefix, nil)
	})
	if err != nil {
		return recipes.Grant{}, l.fail(err)
	}
	wakeups, err := l.waitFirst(ctx, me)
	var token int64
	if err == nil {
		token, err = recipe.Token(ctx, l.s, me)
	}
	if err == nil && recipe.Ended(l.s) {
		err = recipe.Lost(nil)
	}
	if err != nil {
		if !recipe.IsLost(err) {
			if rerr := recipe.Remove(ctx, l.s, me.Path, l.timeout); rerr != nil {
				err = fmt.Errorf("%w (removing %s: %v)", err, me.Path, rerr)
			}
		}
		return recipes.Grant{}, l.fail(err)
	}
	l.me, l.held = me, true
	return recipes.Grant{Token: token, Wakeups: wakeups, Lost: l.s.Done()}, nil
}

// waitFirst lists the queue (no watch) until me is first, sleeping on the
// immediate predecessor in between, and counts the notifications consumed.
func (l *Lock) waitFirst(ctx context.Context, me backends.Node) (wakeups int, err error) {
	for {
		children, err := l.s.Children(ctx, l.path)
		if err != nil {
			return wakeups, err
		}
		i := recipe.IndexOf(children, me.Name)
		switch {
		case i < 0:
			return wakeups, recipe.Lost(fmt.Errorf("own node %s is gone", me.Path))
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
	exists, _, events, err := l.s.ExistsW(wctx, pred)
	if err != nil || !exists {
		return false, err
	}
	return recipe.Await(ctx, l.s, events)
}

// Release deletes this client's node, waking only the next in line. It
// returns recipes.ErrNotHeld if not held and an error matching
// recipes.ErrLockLost if the session ended (the server already removed the
// node). If ctx ends first, the delete is retried on a fresh bounded context
// so the node never outlives Release.
func (l *Lock) Release(ctx context.Context) error {
	if !l.held {
		return fmt.Errorf("fair: release %s: %w", l.path, recipes.ErrNotHeld)
	}
	l.held = false
	if err := recipe.Release(ctx, l.s, l.me.Path, l.timeout); err != nil {
		return fmt.Errorf("fair: release %s: %w", l.path, err)
	}
	return nil
}

// fail wraps an Acquire error; a lost session always matches
// recipes.ErrLockLost as well as backends.ErrSessionLost.
func (l *Lock) fail(err error) error {
	if recipe.IsLost(err) {
		err = recipe.Lost(err)
	}
	return fmt.Errorf("fair: acquire %s: %w", l.path, err)
}
