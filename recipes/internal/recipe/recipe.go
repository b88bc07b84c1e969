// Package recipe holds the steps every lock recipe in recipes/naive and
// recipes/fair repeats: waiting on a one-shot watch while minding the session
// and the caller's context, cleaning up on a fresh bounded context, and
// turning a session loss into recipes.ErrLockLost. Nothing here knows which
// backend it runs on.
package recipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// Fresh returns a context that carries ctx's values but not its cancellation
// or deadline, bounded by timeout instead. Cleanup runs on it so that it still
// happens after the caller gave up.
func Fresh(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// Lost reports the end of the session as a lock error: the result matches
// both recipes.ErrLockLost and backends.ErrSessionLost with errors.Is.
func Lost(cause error) error {
	switch {
	case cause == nil:
		cause = backends.ErrSessionLost
	case errors.Is(cause, recipes.ErrLockLost):
		return cause
	case !errors.Is(cause, backends.ErrSessionLost):
		cause = fmt.Errorf("%w: %w", backends.ErrSessionLost, cause)
	}
	return fmt.Errorf("%w: %w", recipes.ErrLockLost, cause)
}

// IsLost reports whether err means the session (and so every lock it held or
// queued for) is gone.
func IsLost(err error) bool {
	return errors.Is(err, backends.ErrSessionLost) || errors.Is(err, recipes.ErrLockLost)
}

// Ended reports whether the session's Done channel is closed.
func Ended(s backends.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// Await blocks until the one-shot watch events delivers, the session ends or
// ctx is done. It returns woke=true for a watch notification (one wake-up
// consumed), a Lost error when the session ends (or the watch reports
// EventSessionLost), and ctx's error when ctx is done. A channel closed
// without an event while ctx is alive returns (false, nil): the caller
// re-checks its state, which is always safe in these recipes.
func Await(ctx context.Context, s backends.Session, events <-chan backends.Event) (woke bool, err error) {
	select {
	case ev, ok := <-events:
		switch {
		case ok && ev.Type == backends.EventSessionLost:
			return false, Lost(nil)
		case ok:
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case Ended(s):
			return false, Lost(nil)
		}
		return false, nil
	case <-s.Done():
		return false, Lost(nil)
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// Remove deletes path on a fresh context bounded by timeout. A node already
// gone counts as removed; so does a lost session, whose ephemeral nodes the
// server removes itself.
func Remove(ctx context.Context, s backends.Session, path string, timeout time.Duration) error {
	fctx, cancel := Fresh(ctx, timeout)
	defer cancel()
	err := s.Delete(fctx, path)
	if err == nil || errors.Is(err, backends.ErrNoNode) || errors.Is(err, backends.ErrSessionLost) {
		return nil
	}
	return err
}

// IndexOf returns the position of the node named name in children, or -1.
func IndexOf(children []backends.Node, name string) int {
	for i, c := range children {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Release deletes the node a lock is held by. It returns a Lost error if the
// session has ended or the node is already gone (the server removed it with
// the session). If the delete fails for any other reason, ctx's end included,
// it is retried once on a fresh context bounded by timeout, so the node never
// outlives Release; only if that also fails is the error returned.
func Release(ctx context.Context, s backends.Session, path string, timeout time.Duration) error {
	if Ended(s) {
		return Lost(nil)
	}
	err := s.Delete(ctx, path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backends.ErrNoNode) || IsLost(err):
		return Lost(err)
	}
	if rerr := Remove(ctx, s, path, timeout); rerr != nil {
		return fmt.Errorf("%w (retry: %v)", err, rerr)
	}
	return nil
}

// Token returns n's create revision as a fencing token. If the create did not
// report one (CreateRev zero), it reads the node once to learn it.
func Token(ctx context.Context, s backends.Session, n backends.Node) (int64, error) {
	if n.CreateRev != 0 {
		return n.CreateRev, nil
	}
	_, got, err := s.Get(ctx, n.Path)
	switch {
	case errors.Is(err, backends.ErrNoNode) || IsLost(err):
		return 0, Lost(err)
	case err != nil:
		return 0, err
	case got.CreateRev == 0:
		return 0, fmt.Errorf("recipe: %s has no create revision", n.Path)
	}
	return got.CreateRev, nil
}
