// Package coord holds the steps zkbench's election and barrier recipes share
// across families: their session-loss error mapping (Lost, Wrap), creates on
// a fresh bounded context, the term of a leader, and the selector loop built
// on a latch. Waiting on one-shot watches and cleanup on a fresh context come
// from recipes/internal/recipe, shared with the lock recipes. Nothing here
// knows which backend it runs on.
package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Lost returns an error that matches both sentinel (the recipe's own, such as
// recipes.ErrLeadershipLost) and backends.ErrSessionLost with errors.Is.
func Lost(sentinel error) error {
	return fmt.Errorf("%w: %w", sentinel, backends.ErrSessionLost)
}

// Wrap turns err into the recipe's error: a lost session becomes Lost
// (sentinel), anything else is returned as is.
func Wrap(sentinel, err error) error {
	if err == nil || errors.Is(err, sentinel) {
		return err
	}
	if errors.Is(err, backends.ErrSessionLost) {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	return err
}

// Create runs create on a fresh context bounded by timeout, so that a caller
// who gives up mid-request still learns which node was made and can remove
// it. If ctx ended meanwhile, the node is removed and ctx's error returned.
func Create(ctx context.Context, s backends.Session, timeout time.Duration,
	create func(context.Context) (backends.Node, error)) (backends.Node, error) {
	if err := ctx.Err(); err != nil {
		return backends.Node{}, err
	}
	fctx, cancel := recipe.Fresh(ctx, timeout)
	n, err := create(fctx)
	cancel()
	if err != nil {
		return backends.Node{}, err
	}
	if cerr := ctx.Err(); cerr != nil {
		if rerr := recipe.Remove(ctx, s, n.Path, timeout); rerr != nil {
			return backends.Node{}, fmt.Errorf("%w (removing %s: %v)", cerr, n.Path, rerr)
		}
		return backends.Node{}, cerr
	}
	return n, nil
}

// Token returns n's create revision, reading the node once if the call that
// returned n did not report it (ZooKeeper listings leave it zero).
func Token(ctx context.Context, s backends.Session, n backends.Node) (int64, error) {
	if n.CreateRev != 0 {
		return n.CreateRev, nil
	}
	_, got, err := s.Get(ctx, n.Path)
	if err != nil {
		return 0, err
	}
	if got.CreateRev == 0 {
		return 0, fmt.Errorf("coord: %s has no create revision", n.Path)
	}
	return got.CreateRev, nil
}

// CreateIn is Create for a node under parent that makes parent only when it
// is missing: the create is tried first, and only if it fails with
// backends.ErrNoNode (on ZooKeeper, a missing parent) is EnsurePath(parent)
// called and the create tried again. Every participant of a round would
// otherwise pay EnsurePath's requests (several server writes on ZooKeeper)
// for directories that the first one already made.
func CreateIn(ctx context.Context, s backends.Session, timeout time.Duration, parent string,
	create func(context.Context) (backends.Node, error)) (backends.Node, error) {
	n, err := Create(ctx, s, timeout, create)
	if !errors.Is(err, backends.ErrNoNode) {
		return n, err
	}
	if err := s.EnsurePath(ctx, parent); err != nil {
		return backends.Node{}, err
	}
	return Create(ctx, s, timeout, create)
}
