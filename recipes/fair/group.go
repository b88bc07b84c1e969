package fair

import (
	"context"
	"fmt"
	"sort"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// NewRelistGroup is a recipes.GroupFactory: the group membership of the
// ZooKeeper recipes page, on both backends.
func NewRelistGroup(s backends.Session, p string) (recipes.Group, error) {
	return &RelistGroup{s: s, path: p}, nil
}

// RelistGroup keeps a view with a children watch and a full listing on
// every change.
//
// Algorithm: Join makes the ephemeral <path>/<id> (EnsurePath first);
// Leave deletes it. Watch loops: ChildrenW on <path>, report the listing,
// sleep until the watch fires.
//
// Cost: every change notifies every watcher once (a watcher re-arming late
// folds several changes into one notification), and each then lists the
// whole group: O(N) bytes a watcher a change, O(N²) a change over N
// watchers. Every watcher must hear every change, so the notifications are
// the job; the listing is what the delta variant (recipes/native, etcd's
// prefix watch) saves.
type RelistGroup struct {
	s    backends.Session
	path string
}

var _ recipes.Group = (*RelistGroup)(nil)

// Join implements recipes.Group.
func (g *RelistGroup) Join(ctx context.Context, id string) error {
	return g.fail("join", recipe.JoinGroup(ctx, g.s, g.path, id))
}

// Leave implements recipes.Group.
func (g *RelistGroup) Leave(ctx context.Context, id string) error {
	return g.fail("leave", recipe.LeaveGroup(ctx, g.s, g.path, id))
}

// Watch implements recipes.Group.
func (g *RelistGroup) Watch(ctx context.Context, seen func([]string)) error {
	if err := g.s.EnsurePath(ctx, g.path); err != nil {
		return g.fail("watch", err)
	}
	for {
		if err := g.watchOnce(ctx, seen); err != nil {
			return g.fail("watch", err)
		}
	}
}

func (g *RelistGroup) watchOnce(ctx context.Context, seen func([]string)) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, events, err := g.s.ChildrenW(wctx, g.path)
	if err != nil {
		return err
	}
	names := make([]string, len(children))
	for i, c := range children {
		names[i] = c.Name
	}
	sort.Strings(names)
	seen(names)
	_, err = recipe.Wait(ctx, g.s, events, nil)
	return err
}

func (g *RelistGroup) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fair: %s group %s: %w", op, g.path, err)
}
