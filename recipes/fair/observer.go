package fair

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Observer watches the fair election's leader: the smallest candidate node.
//
// Algorithm: Next lists <path>'s children without a watch and reads the
// smallest. If it holds a leader other than the one the caller knows, that is
// the answer. Otherwise the observer arms ExistsW on that node alone and
// lists again when it goes. With no candidate at all it arms ChildrenW on
// <path> until one appears.
//
// Herd behaviour: an observer watches only the leader's node, never the
// queue, so candidates joining or leaving behind the leader wake no
// observer, and a failover notifies each observer exactly once. (The
// textbook alternative, ChildrenW on the election, would wake every observer
// on every change to the queue.) Every observer must learn of every new
// leader, so N observers cost N notifications per failover; requests per
// failover per observer: one list, one read and one ExistsW.
//
// What an observer reports is the smallest candidate, which may not yet know
// that it leads (see the recipes page's note on leader acknowledgement).
type Observer struct {
	s    backends.Session
	path string
	// last caches the node of the leader Next last returned, so that the
	// next call can watch it without listing again.
	last     backends.Node
	lastInfo recipes.LeaderInfo
}

var _ recipes.Observer = (*Observer)(nil)

// NewObserver returns an observer of the fair election at path. It makes no
// request. Options are accepted for symmetry with the other recipes; none
// applies yet.
func NewObserver(s backends.Session, path string, _ ...recipes.Option) *Observer {
	return &Observer{s: s, path: path}
}

// Leader implements recipes.Observer.
func (o *Observer) Leader(ctx context.Context) (recipes.LeaderInfo, error) {
	for {
		children, err := o.s.Children(ctx, o.path)
		switch {
		case errors.Is(err, backends.ErrNoNode):
			return recipes.LeaderInfo{}, o.fail(recipes.ErrNoLeader)
		case err != nil:
			return recipes.LeaderInfo{}, o.fail(err)
		case len(children) == 0:
			return recipes.LeaderInfo{}, o.fail(recipes.ErrNoLeader)
		}
		info, ok, err := recipe.ReadLeader(ctx, o.s, children[0].Path)
		if err != nil {
			return recipes.LeaderInfo{}, o.fail(err)
		}
		if ok {
			return info, nil
		}
	}
}

// Next implements recipes.Observer. Cancelling ctx drops the watch and
// returns ctx's error.
func (o *Observer) Next(ctx context.Context, after recipes.LeaderInfo) (recipes.LeaderInfo, error) {
	if after.Token != 0 && after == o.lastInfo {
		// Watch the leader we already know before listing anything.
		if _, err := recipe.WaitGone(ctx, o.s, o.last.Path); err != nil {
			return recipes.LeaderInfo{}, o.fail(err)
		}
	}
	for {
		children, err := o.s.Children(ctx, o.path)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			return recipes.LeaderInfo{}, o.fail(err)
		}
		if len(children) == 0 {
			if err := o.waitCandidate(ctx); err != nil {
				return recipes.LeaderInfo{}, o.fail(err)
			}
			continue
		}
		info, ok, err := recipe.ReadLeader(ctx, o.s, children[0].Path)
		switch {
		case err != nil:
			return recipes.LeaderInfo{}, o.fail(err)
		case !ok:
			continue // gone between the list and the read
		case info.Token != after.Token:
			o.last, o.lastInfo = children[0], info
			return info, nil
		}
		if _, err := recipe.WaitGone(ctx, o.s, children[0].Path); err != nil {
			return recipes.LeaderInfo{}, o.fail(err)
		}
	}
}

// waitCandidate waits for the first candidate of an empty election.
func (o *Observer) waitCandidate(ctx context.Context) error {
	if err := o.s.EnsurePath(ctx, o.path); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, events, err := o.s.ChildrenW(wctx, o.path)
	if err != nil || len(children) > 0 {
		return err
	}
	_, err = recipe.Wait(ctx, o.s, events, nil)
	return err
}

func (o *Observer) fail(err error) error {
	return fmt.Errorf("fair: observe %s: %w", o.path, err)
}
