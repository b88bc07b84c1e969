package fair

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// NewBarrierFactory adapts NewBarrier to recipes.BarrierFactory.
func NewBarrierFactory(opts ...recipes.Option) recipes.BarrierFactory {
	return func(s backends.Session, path string) recipes.Barrier {
		return NewBarrier(s, path, opts...)
	}
}

// Barrier is the simple barrier of the ZooKeeper recipes page: the barrier is
// up while the node <path> exists.
//
// Algorithm: Set creates <path> as an ephemeral node; Remove deletes it.
// Wait calls ExistsW on <path>: if it does not exist, the barrier is down;
// else it sleeps until the watch fires and calls ExistsW again.
//
// Herd behaviour: every waiter watches the one node, so lowering the barrier
// notifies every waiter once (N notifications, one ExistsW each after it).
// That is not a herd: every one of them may proceed, nobody goes back to
// sleep. There is no naive/fair split for this recipe; it lives here because
// it wastes no wake-up. The node is ephemeral (the Session contract has no
// other kind), so the barrier also falls when the setter's session ends.
type Barrier struct {
	s    backends.Session
	path string
	opt  recipes.Options
}

var _ recipes.Barrier = (*Barrier)(nil)

// NewBarrier returns the simple barrier at path for session s. It makes no
// request.
func NewBarrier(s backends.Session, path string, opts ...recipes.Option) *Barrier {
	return &Barrier{s: s, path: path, opt: recipes.NewOptions(opts...)}
}

// Set implements recipes.Barrier. A create already sent when ctx ends runs
// to completion on a fresh bounded context and its node is removed.
func (b *Barrier) Set(ctx context.Context) error {
	_, err := recipe.CreateIn(ctx, b.s, b.opt.CleanupTimeout, path.Dir(b.path), func(c context.Context) (backends.Node, error) {
		return b.s.Create(c, b.path, nil)
	})
	return b.fail("set", err)
}

// Remove implements recipes.Barrier.
func (b *Barrier) Remove(ctx context.Context) error {
	err := b.s.Delete(ctx, b.path)
	if errors.Is(err, backends.ErrNoNode) {
		err = nil
	}
	return b.fail("remove", err)
}

// Wait implements recipes.Barrier.
func (b *Barrier) Wait(ctx context.Context) error {
	for {
		up, err := b.waitOnce(ctx)
		if err != nil || !up {
			return b.fail("wait", err)
		}
	}
}

// waitOnce checks the barrier and, if it is up, sleeps until its watch fires.
func (b *Barrier) waitOnce(ctx context.Context) (up bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, _, events, err := b.s.ExistsW(wctx, b.path)
	if err != nil || !exists {
		return false, err
	}
	_, err = recipe.Wait(ctx, b.s, events, nil)
	return true, err
}

func (b *Barrier) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fair: %s barrier %s: %w", op, b.path, recipe.WrapLost(recipes.ErrBarrierBroken, err))
}
