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

// DoubleBarrier is the herd-free double barrier of the ZooKeeper recipes page.
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
type DoubleBarrier struct {
	r recipe.Round
}

var _ recipes.DoubleBarrier = (*DoubleBarrier)(nil)

// NewDoubleBarrier returns one participant of the round at path for n
// participants. It makes no request.
func NewDoubleBarrier(s backends.Session, path string, n int, opts ...recipes.Option) *DoubleBarrier {
	return &DoubleBarrier{r: recipe.NewRound("fair", s, path, n, recipes.NewOptions(opts...).CleanupTimeout)}
}

// Enter implements recipes.DoubleBarrier.
func (b *DoubleBarrier) Enter(ctx context.Context) (recipes.Passage, error) {
	return b.r.Enter(ctx, b.gather)
}

// gather: the N-th arrival creates the ready node; everyone else sleeps on
// the ready watch armed on arrival.
func (b *DoubleBarrier) gather(ctx, _ context.Context, events <-chan backends.Event) (recipes.Passage, error) {
	var p recipes.Passage
	children, err := b.r.S.Children(ctx, b.r.Members)
	if err != nil {
		return p, err
	}
	if len(children) >= b.r.N {
		return p, b.r.CreateReady(ctx)
	}
	// Only the ready node's creation can fire a watch armed while it was
	// absent. If the backend drops the watch, re-arm it and look again.
	w, err := recipe.Wait(ctx, b.r.S, events, nil)
	for err == nil && w == recipe.Recheck {
		w, err = b.rearmReady(ctx)
	}
	if w == recipe.First {
		p.Wakeups++
	}
	return p, err
}

// rearmReady arms a new ready watch and waits on it; Second means the ready
// node exists already.
func (b *DoubleBarrier) rearmReady(ctx context.Context) (recipe.Woke, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, _, events, err := b.r.S.ExistsW(wctx, b.r.Ready)
	switch {
	case err != nil:
		return recipe.Recheck, err
	case ready:
		return recipe.Second, nil
	}
	return recipe.Wait(ctx, b.r.S, events, nil)
}

// Leave implements recipes.DoubleBarrier.
func (b *DoubleBarrier) Leave(ctx context.Context) (recipes.Passage, error) {
	return b.r.Leave(ctx, b.leave)
}

func (b *DoubleBarrier) leave(ctx context.Context) (recipes.Passage, error) {
	var p recipes.Passage
	for {
		children, err := b.r.S.Children(ctx, b.r.Members)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			return p, err
		}
		i := recipe.IndexOf(children, b.r.Me.Name)
		switch {
		case len(children) == 0:
			// Every participant left. The last one out cleans up; so does
			// any that finds the round empty, since the last one's removes
			// are best effort (each bounded by CleanupTimeout, errors
			// dropped): in a loaded test run on a 3-server ensemble the
			// round's node was left behind, by a cause not established.
			b.r.Cleanup(ctx)
			return p, nil
		case len(children) == 1 && i == 0:
			if err := b.r.DeleteMe(ctx); err != nil {
				return p, err
			}
			b.r.Cleanup(ctx)
			return p, nil
		}
		watch := children[0].Path // everyone else waits for the lowest
		if i == 0 {
			watch = children[len(children)-1].Path // the lowest waits for the highest
		} else if i > 0 {
			if err := b.r.DeleteMe(ctx); err != nil {
				return p, err
			}
		}
		woke, err := recipe.WaitGone(ctx, b.r.S, watch)
		if err != nil {
			return p, err
		}
		if woke {
			p.Wakeups++
		}
	}
}
