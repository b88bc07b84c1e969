package fair

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Layout of one double barrier round at <path>.
const (
	membersDir        = "members" // <path>/members/p_...: one ephemeral node per participant
	readyName         = "ready"   // <path>/ready: made by the N-th arrival
	participantPrefix = "p_"
)

// NewDoubleBarrierFactory adapts NewDoubleBarrier to recipes.DoubleBarrierFactory.
func NewDoubleBarrierFactory(opts ...recipes.Option) recipes.DoubleBarrierFactory {
	return func(s backends.Session, path string, n int) recipes.DoubleBarrier {
		return NewDoubleBarrier(s, path, n, opts...)
	}
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
	s       backends.Session
	path    string
	members string
	ready   string
	n       int
	opt     recipes.Options
	me      backends.Node
	entered bool
}

var _ recipes.DoubleBarrier = (*DoubleBarrier)(nil)

// NewDoubleBarrier returns one participant of the round at path for n
// participants. It makes no request.
func NewDoubleBarrier(s backends.Session, path string, n int, opts ...recipes.Option) *DoubleBarrier {
	return &DoubleBarrier{
		s: s, path: path, members: path + "/" + membersDir, ready: path + "/" + readyName,
		n: n, opt: recipes.NewOptions(opts...),
	}
}

// Enter implements recipes.DoubleBarrier.
func (b *DoubleBarrier) Enter(ctx context.Context) (recipes.Passage, error) {
	p, err := b.enter(ctx)
	if err != nil {
		if b.me.Path != "" {
			_ = recipe.Remove(ctx, b.s, b.me.Path, b.opt.CleanupTimeout)
			b.me = backends.Node{}
		}
		return p, fmt.Errorf("fair: enter barrier %s: %w", b.path, recipe.WrapLost(recipes.ErrBarrierBroken, err))
	}
	b.entered = true
	return p, nil
}

func (b *DoubleBarrier) enter(ctx context.Context) (recipes.Passage, error) {
	var p recipes.Passage
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, _, events, err := b.s.ExistsW(wctx, b.ready)
	if err != nil {
		return p, err
	}
	b.me, err = recipe.CreateIn(ctx, b.s, b.opt.CleanupTimeout, b.members, func(c context.Context) (backends.Node, error) {
		return b.s.CreateSequential(c, b.members, participantPrefix, nil)
	})
	if err != nil || ready {
		return p, err
	}
	children, err := b.s.Children(ctx, b.members)
	if err != nil {
		return p, err
	}
	if len(children) >= b.n {
		_, err := b.s.Create(ctx, b.ready, nil)
		if errors.Is(err, backends.ErrNodeExists) {
			err = nil
		}
		return p, err
	}
	// Only the ready node's creation can fire a watch armed while it was
	// absent. If the backend drops the watch, re-arm it and look again.
	w, err := recipe.Wait(ctx, b.s, events, nil)
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
	ready, _, events, err := b.s.ExistsW(wctx, b.ready)
	switch {
	case err != nil:
		return recipe.Recheck, err
	case ready:
		return recipe.Second, nil
	}
	return recipe.Wait(ctx, b.s, events, nil)
}

// Leave implements recipes.DoubleBarrier.
func (b *DoubleBarrier) Leave(ctx context.Context) (recipes.Passage, error) {
	if !b.entered {
		return recipes.Passage{}, fmt.Errorf("fair: leave barrier %s: %w", b.path, recipes.ErrNotEntered)
	}
	b.entered = false
	p, err := b.leave(ctx)
	if b.me.Path != "" {
		_ = recipe.Remove(ctx, b.s, b.me.Path, b.opt.CleanupTimeout)
		b.me = backends.Node{}
	}
	if err != nil {
		return p, fmt.Errorf("fair: leave barrier %s: %w", b.path, recipe.WrapLost(recipes.ErrBarrierBroken, err))
	}
	return p, nil
}

func (b *DoubleBarrier) leave(ctx context.Context) (recipes.Passage, error) {
	var p recipes.Passage
	for {
		children, err := b.s.Children(ctx, b.members)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			return p, err
		}
		i := recipe.IndexOf(children, b.me.Name)
		switch {
		case len(children) == 0:
			// Every participant left. The last one out cleans up; so does
			// any that finds the round empty, since the last one's removes
			// are best effort (each bounded by CleanupTimeout, errors
			// dropped): in a loaded test run on a 3-server ensemble the
			// round's node was left behind, by a cause not established.
			b.cleanup(ctx)
			return p, nil
		case len(children) == 1 && i == 0:
			if err := b.s.Delete(ctx, b.me.Path); err != nil && !errors.Is(err, backends.ErrNoNode) {
				return p, err
			}
			b.me = backends.Node{}
			b.cleanup(ctx)
			return p, nil
		}
		watch := children[0].Path // everyone else waits for the lowest
		if i == 0 {
			watch = children[len(children)-1].Path // the lowest waits for the highest
		} else if i > 0 {
			if err := b.s.Delete(ctx, b.me.Path); err != nil && !errors.Is(err, backends.ErrNoNode) {
				return p, err
			}
			b.me = backends.Node{}
		}
		woke, err := waitNodeGone(ctx, b.s, watch)
		if err != nil {
			return p, err
		}
		if woke {
			p.Wakeups++
		}
	}
}

// cleanup removes what is left of the round once every participant left:
// the ready node, then the directories (best effort: on etcd they do not
// exist, and on ZooKeeper a straggler's node keeps them).
func (b *DoubleBarrier) cleanup(ctx context.Context) {
	_ = recipe.Remove(ctx, b.s, b.ready, b.opt.CleanupTimeout)
	_ = recipe.Remove(ctx, b.s, b.members, b.opt.CleanupTimeout)
	_ = recipe.Remove(ctx, b.s, b.path, b.opt.CleanupTimeout)
}

// waitNodeGone watches path and returns once a notification arrives (woke)
// or path turns out to be gone already (not woke).
func waitNodeGone(ctx context.Context, s backends.Session, path string) (woke bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, _, events, err := s.ExistsW(wctx, path)
	if err != nil || !exists {
		return false, err
	}
	w, err := recipe.Wait(ctx, s, events, nil)
	return w == recipe.First, err
}
