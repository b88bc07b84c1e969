package fair

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// NewDoubleBarrierFactory adapts NewDoubleBarrier to recipes.DoubleBarrierFactory.
func NewDoubleBarrierFactory(opts ...recipes.Option) recipes.DoubleBarrierFactory {
	return recipe.DoubleBarrierFactory(NewDoubleBarrier, opts...)
}

// NewDoubleBarrier returns one participant of the herd-free double barrier
// of the ZooKeeper recipes page: of the round at path for n participants.
// It makes no request.
//
// Enter: arm ExistsW on <path>/ready, create this participant's ephemeral
// sequential node under <path>/members, list the members; with fewer than N
// wait for the ready watch, else create <path>/ready (an existing one is
// fine). Leave: list the members; if none are left, exit; if only this one
// is, delete it and exit; if this one is the lowest, wait for the highest to
// go; else delete this one and wait for the lowest to go; repeat.
//
// Herd behaviour: while entering, each participant sleeps on the ready node
// and wakes once, when the N-th arrival creates it (N-1 notifications per
// round, none wasted). While leaving, only the lowest participant watches
// the others (one at a time, the highest), and everyone else watches the
// lowest: each departure wakes at most one participant, except the lowest's,
// the last, which wakes everyone still waiting. About 2 notifications per
// participant per round whatever N; requests per participant per round:
// ExistsW, create, list (enter), list, delete, ExistsW, list (leave), plus
// the lowest's extra list and ExistsW per departure it observes.
//
// The ready node: the recipes page makes it a regular (persistent) node. The
// backends.Session contract has only ephemeral nodes (etcd has no other kind
// here), so the N-th arrival makes it ephemeral, owned by its session. That
// is safe because every participant armed its ready watch before creating
// its member node, so each of the N counted participants is notified of the
// ready node's creation even if it is deleted right after. Failure modes: if
// the N-th arrival's session ends before it creates the ready node, no one
// creates it and Enter stalls until ctx ends (the persistent variant has the
// same flaw); if it ends after, participants still pass, but a participant
// arriving after the ready node vanished (more than N arrivals) would wait
// in vain, which is why each round needs its own path and exactly N
// participants. The last participant out, and any that finds no member
// left, deletes the ready node and the round's directories (on ZooKeeper,
// <path>/members and <path> are persistent; on etcd the two deletes find
// nothing); a round abandoned mid-way leaves them to the run's namespace
// cleanup.
func NewDoubleBarrier(s backends.Session, path string, n int, opts ...recipes.Option) recipes.DoubleBarrier {
	return recipe.NewRound("fair", gatherRound, leaveRound, s, path, n, opts...)
}

// gatherRound: the N-th arrival creates the ready node; everyone else sleeps on
// the ready watch armed on arrival.
func gatherRound(ctx, _ context.Context, r *recipe.Round, events <-chan backends.Event) (wakeups int, err error) {
	children, err := r.S.Children(ctx, r.Members)
	if err != nil {
		return 0, err
	}
	if len(children) >= r.N {
		return 0, r.CreateReady(ctx)
	}
	// Only the ready node's creation can fire a watch armed while it was
	// absent. If the backend drops the watch, re-arm it and look again.
	w, err := recipe.Wait(ctx, r.S, events, nil)
	for err == nil && w == recipe.Recheck {
		w, err = rearmReady(ctx, r)
	}
	if w == recipe.First {
		wakeups++
	}
	return wakeups, err
}

// rearmReady arms a new ready watch and waits on it; Second means the ready
// node exists already.
func rearmReady(ctx context.Context, r *recipe.Round) (recipe.Woke, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, _, events, err := r.S.ExistsW(wctx, r.Ready)
	switch {
	case err != nil:
		return recipe.Recheck, err
	case ready:
		return recipe.Second, nil
	}
	return recipe.Wait(ctx, r.S, events, nil)
}

// leaveRound: the lowest participant waits for the highest, everyone else
// deletes its node and waits for the lowest, until the round is empty.
func leaveRound(ctx context.Context, r *recipe.Round) (wakeups int, err error) {
	for {
		children, err := r.S.Children(ctx, r.Members)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			return wakeups, err
		}
		i := recipe.IndexOf(children, r.Me.Name)
		switch {
		case len(children) == 0:
			// Every participant left. The last one out cleans up; so does
			// any that finds the round empty, since the last one's removes
			// are best effort (each bounded by CleanupTimeout, errors
			// dropped): in a loaded test run on a 3-server ensemble the
			// round's node was left behind, by a cause not established.
			r.Cleanup(ctx)
			return wakeups, nil
		case len(children) == 1 && i == 0:
			if err := r.DeleteMe(ctx); err != nil {
				return wakeups, err
			}
			r.Cleanup(ctx)
			return wakeups, nil
		}
		watch := children[0].Path // everyone else waits for the lowest
		if i == 0 {
			watch = children[len(children)-1].Path // the lowest waits for the highest
		} else if i > 0 {
			if err := r.DeleteMe(ctx); err != nil {
				return wakeups, err
			}
		}
		woke, err := recipe.WaitGone(ctx, r.S, watch)
		if err != nil {
			return wakeups, err
		}
		if woke {
			wakeups++
		}
	}
}
