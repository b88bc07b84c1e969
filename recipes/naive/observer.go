package naive

import (
	"context"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Observer watches the naive election's leader node.
//
// Algorithm: Next reads <path>/leader; if it holds a leader other than the
// one the caller knows, that is the answer. Otherwise it arms ExistsW on the
// node (a deletion watch while it exists, a creation watch while it does not)
// and reads again after every notification.
//
// Herd behaviour: every observer watches the one leader node, as every
// candidate does, so a failover notifies every observer twice: once for the
// old leader's node going, once for the new leader's node appearing (unless
// the new leader wins the race before the observer re-arms). Requests per
// failover per observer: about two reads and two ExistsW.
type Observer struct {
	s    backends.Session
	path string
	node string
}

var _ recipes.Observer = (*Observer)(nil)

// NewObserver returns an observer of the naive election at path. It makes no
// request. Options are accepted for symmetry with the other recipes; none
// applies yet.
func NewObserver(s backends.Session, path string, _ ...recipes.Option) *Observer {
	return &Observer{s: s, path: path, node: leaderNode(path)}
}

// Leader implements recipes.Observer.
func (o *Observer) Leader(ctx context.Context) (recipes.LeaderInfo, error) {
	info, ok, err := recipe.ReadLeader(ctx, o.s, o.node)
	switch {
	case err != nil:
		return recipes.LeaderInfo{}, o.fail(err)
	case !ok:
		return recipes.LeaderInfo{}, o.fail(recipes.ErrNoLeader)
	}
	return info, nil
}

// Next implements recipes.Observer. Cancelling ctx drops the watch and
// returns ctx's error.
func (o *Observer) Next(ctx context.Context, after recipes.LeaderInfo) (recipes.LeaderInfo, error) {
	for {
		info, ok, err := recipe.ReadLeader(ctx, o.s, o.node)
		if err != nil {
			return recipes.LeaderInfo{}, o.fail(err)
		}
		if ok && info.Token != after.Token {
			return info, nil
		}
		if err := o.wait(ctx, after); err != nil {
			return recipes.LeaderInfo{}, o.fail(err)
		}
	}
}

// wait arms ExistsW on the leader node and returns after one notification,
// or at once if the node already changed from after's.
func (o *Observer) wait(ctx context.Context, after recipes.LeaderInfo) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, n, events, err := o.s.ExistsW(wctx, o.node)
	if err != nil {
		return err
	}
	if exists && n.CreateRev != 0 && n.CreateRev != after.Token {
		return nil // a new leader appeared since the read
	}
	_, err = recipe.Wait(ctx, o.s, events, nil)
	return err
}

func (o *Observer) fail(err error) error {
	return fmt.Errorf("naive: observe %s: %w", o.path, err)
}
