package naive

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// lockName is the one node whose existence means "held".
const lockName = "lock"

// Lock is the create-to-grab lock, the textbook herd.
//
// Algorithm: Acquire creates the ephemeral node <path>/lock. If it exists
// already, the client arms ExistsW on it and sleeps; on any wake-up it tries
// the create again. Release deletes the node.
//
// Herd behaviour: every waiter watches the same node, so each release wakes
// every waiter (N-1 notifications for N contenders), all of them race to
// create, one wins and the rest re-arm their watches: N-2 wasted wake-ups and
// about 2(N-1) wasted requests per handoff. There is no queue, so no order:
// the winner of each race is whoever's create lands first.
//
// Token: the lock node's create revision (ZooKeeper czxid, etcd create
// revision); if the backend's create does not report it (ZooKeeper), one Get
// per grant reads it. <path> is made on the Lock's first Acquire only, and
// again if a create finds it gone.
//
// Leftovers: the lock node's data is a tag unique to this Lock. If a failed
// call could not remove the node it made (Release's delete and retry failed,
// or a cancelled Acquire's cleanup did, say for want of a quorum) or a
// create's outcome is unknown, the node may stay, owned by the live session,
// and the lock would look held forever. So the next Acquire or Release of
// this Lock first reads <path>/lock and deletes it if it carries the tag
// (the tag, not the path, says whose it is: after a delete of unknown
// outcome the path may hold another client's node). A Lock that ever
// suspected a leftover also checks the tag once per Acquire when it finds
// the node taken (a create the server applied late). Without a failure this
// costs no request. A client that never calls its Lock again keeps its
// leftover node until its session ends.
//
// A Lock is used by one goroutine on one session (see recipes.Lock).
type Lock struct {
	s      backends.Session
	path   string
	node   string
	tag    []byte
	parent *recipe.Parent
	left   *recipe.Leftovers
	held   bool
}

var _ recipes.Lock = (*Lock)(nil)

// New returns the naive lock named path on session s. It makes no request.
// recipes.WithCleanupTimeout bounds the fresh context on which a create runs
// to completion and a cancelled Acquire removes its node (default 5s).
func New(s backends.Session, path string, opts ...recipes.Option) *Lock {
	node := path + "/" + lockName
	tag := []byte(recipe.Tag())
	timeout := recipes.NewOptions(opts...).CleanupTimeout
	return &Lock{s: s, path: path, node: node, tag: tag, parent: recipe.NewParent(s, path),
		left: recipe.NodeLeftovers(s, node, tag, timeout)}
}

// Acquire blocks until this client created the lock node, ctx is done or the
// session is lost.
//
// It first removes this Lock's leftover node, if an earlier call failed to
// (see Lock); if that fails, Acquire returns the error without trying.
//
// Cancelling ctx stops the wait at once. A create already sent runs to
// completion on a fresh context bounded by the cleanup timeout, and if it
// made the node, the node is deleted before Acquire returns ctx's error (if
// that delete fails too, the node is left to the Lock's next call); a
// waiter that only watches leaves nothing behind. If the session ends while
// waiting, Acquire returns an error matching recipes.ErrLockLost and
// backends.ErrSessionLost, and never reports a grant on a dead session.
func (l *Lock) Acquire(ctx context.Context) (recipes.Grant, error) {
	if l.held {
		return recipes.Grant{}, fmt.Errorf("naive: acquire %s: %w", l.path, ErrHeld)
	}
	if _, err := l.left.Tidy(ctx); err != nil {
		return recipes.Grant{}, l.fail(err)
	}
	wakeups, checked := 0, false
	for {
		n, err := l.parent.Create(ctx, func(ctx context.Context) (backends.Node, error) {
			return l.left.Create(ctx, func(c context.Context) (backends.Node, error) {
				return l.s.Create(c, l.node, l.tag)
			})
		})
		if err == nil {
			return l.grant(ctx, n, wakeups)
		}
		if !errors.Is(err, backends.ErrNodeExists) {
			return recipes.Grant{}, l.fail(err)
		}
		if l.left.Doubted() && !checked {
			// The node in the way may be this Lock's own, made late.
			checked = true
			l.left.Suspect()
			removed, err := l.left.Tidy(ctx)
			if err != nil {
				return recipes.Grant{}, l.fail(err)
			}
			if removed > 0 {
				continue
			}
		}
		woke, err := recipe.AwaitGone(ctx, l.s, l.node)
		if err != nil {
			return recipes.Grant{}, l.fail(err)
		}
		if woke {
			wakeups++
		}
	}
}

// grant turns the created node into a Grant, giving the node back if the
// session died meanwhile or the token cannot be read.
func (l *Lock) grant(ctx context.Context, n backends.Node, wakeups int) (recipes.Grant, error) {
	token, err := recipe.LockToken(ctx, l.s, n)
	if err == nil && recipe.Ended(l.s) {
		err = recipe.LockLost(nil)
	}
	if err != nil {
		if !recipe.IsLost(err) {
			_ = l.left.Remove(ctx, n.Path)
		}
		return recipes.Grant{}, l.fail(err)
	}
	l.held = true
	return recipes.Grant{Token: token, Wakeups: wakeups, Lost: l.s.Done()}, nil
}

// Release deletes the lock node, waking every waiter. It returns an error
// matching recipes.ErrLockLost if the session ended (the server already
// removed the node). If ctx ends first, the delete is retried on a fresh
// bounded context; if that fails too, the lock is no longer held and the node
// is left to the Lock's next call.
//
// If not held, Release returns recipes.ErrNotHeld after removing this Lock's
// leftover node, if an earlier call failed to (see Lock).
func (l *Lock) Release(ctx context.Context) error {
	if !l.held {
		if _, err := l.left.Tidy(ctx); err != nil {
			return fmt.Errorf("naive: release %s: %w (%w)", l.path, recipes.ErrNotHeld, err)
		}
		return fmt.Errorf("naive: release %s: %w", l.path, recipes.ErrNotHeld)
	}
	l.held = false
	if err := l.left.Release(ctx, l.node); err != nil {
		return fmt.Errorf("naive: release %s: %w", l.path, err)
	}
	return nil
}

// fail wraps an Acquire error; a lost session always matches
// recipes.ErrLockLost as well as backends.ErrSessionLost.
func (l *Lock) fail(err error) error {
	if recipe.IsLost(err) {
		err = recipe.LockLost(err)
	}
	return fmt.Errorf("naive: acquire %s: %w", l.path, err)
}
