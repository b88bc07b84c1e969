package recipe

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// Create runs create on a context that outlives ctx by at most timeout
// (Outlive), so that a caller who gives up mid-request still learns which
// node was made and can remove it. If ctx ended meanwhile, the node is
// removed and ctx's error returned.
func Create(ctx context.Context, s backends.Session, timeout time.Duration,
	create func(context.Context) (backends.Node, error)) (backends.Node, error) {
	if err := ctx.Err(); err != nil {
		return backends.Node{}, err
	}
	fctx, cancel := Outlive(ctx, timeout)
	n, err := create(fctx)
	cancel()
	if err != nil {
		return backends.Node{}, err
	}
	if cerr := ctx.Err(); cerr != nil {
		if rerr := Remove(ctx, s, n.Path, timeout); rerr != nil {
			return backends.Node{}, fmt.Errorf("%w (removing %s: %v)", cerr, n.Path, rerr)
		}
		return backends.Node{}, cerr
	}
	return n, nil
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

// JoinGroup adds member id to the group at group (recipes.Group's Join on
// a session): the ephemeral node <group>/<id>, made after EnsurePath(group).
func JoinGroup(ctx context.Context, s backends.Session, group, id string) error {
	if err := s.EnsurePath(ctx, group); err != nil {
		return err
	}
	_, err := s.Create(ctx, path.Join(group, id), nil)
	return err
}

// LeaveGroup removes member id from the group at group (recipes.Group's
// Leave on a session): nil if it is not in.
func LeaveGroup(ctx context.Context, s backends.Session, group, id string) error {
	err := s.Delete(ctx, path.Join(group, id))
	if errors.Is(err, backends.ErrNoNode) {
		return nil
	}
	return err
}
