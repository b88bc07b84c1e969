package naive

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Layout of one double barrier round at <path>, the same as recipes/fair's.
const (
	membersDir        = "members" // <path>/members/p_...: one ephemeral node per participant
	readyName         = "ready"   // <path>/ready: made by whoever first counts N
	participantPrefix = "p_"
)

// NewDoubleBarrierFactory adapts NewDoubleBarrier to recipes.DoubleBarrierFactory.
func NewDoubleBarrierFactory(opts ...recipes.Option) recipes.DoubleBarrierFactory {
	return func(s backends.Session, path string, n int) recipes.DoubleBarrier {
		return NewDoubleBarrier(s, path, n, opts...)
	}
}

// DoubleBarrier is the double barrier as it is usually first written (and as
// Curator's DistributedDoubleBarrier enters): everyone counts the members.
//
// Enter: arm ExistsW on <path>/ready, create this participant's ephemeral
// sequential node under <path>/members, then loop: ChildrenW on the members;
// with N or more, create <path>/ready (an existing one is fine) and pass;
// else sleep until either watch fires (a ready notification passes at once).
// Leave: delete this participant's node, then loop: ChildrenW on the
// members; with none left, pass; else sleep until the list changes.
//
// Herd behaviour: every participant watches the members list, so every
// arrival and every departure wakes every participant still waiting, and all
// of them list the members again: O(N) notifications and O(N) requests per
// participant per round, O(N²) per round in all, nearly all wasted. The
// ready node is needed for correctness, not speed: a participant that passes
// and leaves at once would otherwise shrink the count below N under a slow
// participant still counting, which would then wait forever. Its creation
// wakes every participant once more.
//
// The ready node is ephemeral, made by the first participant that counts N
// (see recipes/fair.DoubleBarrier for why and its failure modes); the first
// participant that sees the members empty right after its own departure
// deletes it and the round's directories.
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
		return p, fmt.Errorf("naive: enter barrier %s: %w", b.path, recipe.WrapLost(recipes.ErrBarrierBroken, err))
	}
	b.entered = true
	return p, nil
}

func (b *DoubleBarrier) enter(ctx context.Context) (recipes.Passage, error) {
	var p recipes.Passage
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, _, readyEvents, err := b.s.ExistsW(rctx, b.ready)
	if err != nil {
		return p, err
	}
	b.me, err = recipe.CreateIn(ctx, b.s, b.opt.CleanupTimeout, b.members, func(c context.Context) (backends.Node, error) {
		return b.s.CreateSequential(c, b.members, participantPrefix, nil)
	})
	if err != nil || ready {
		return p, err
	}
	for {
		full, w, err := b.countOnce(ctx, readyEvents)
		if w != recipe.Recheck {
			p.Wakeups++
		}
		switch {
		case err != nil:
			return p, err
		case full:
			_, err := b.s.Create(ctx, b.ready, nil)
			if errors.Is(err, backends.ErrNodeExists) {
				err = nil
			}
			return p, err
		case w == recipe.Second:
			return p, nil // the ready node appeared
		case w == recipe.Recheck:
			fired, closed := pollWatch(readyEvents)
			if fired {
				p.Wakeups++
				return p, nil
			}
			if closed { // the backend dropped the ready watch: arm it again
				if ready, _, readyEvents, err = b.s.ExistsW(rctx, b.ready); err != nil || ready {
					return p, err
				}
			}
		}
	}
}

// pollWatch looks at a one-shot watch channel without blocking: fired if
// it delivered its notification (which ready watches only do on creation),
// closed if it closed without one.
func pollWatch(events <-chan backends.Event) (fired, closed bool) {
	select {
	case ev, ok := <-events:
		return ok && ev.Type != backends.EventSessionLost, !ok
	default:
		return false, false
	}
}

// countOnce lists the members with a watch; if fewer than N, it sleeps until
// the members change (First) or the ready node appears (Second).
func (b *DoubleBarrier) countOnce(ctx context.Context, readyEvents <-chan backends.Event) (full bool, w recipe.Woke, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, events, err := b.s.ChildrenW(wctx, b.members)
	if err != nil || len(children) >= b.n {
		return err == nil, recipe.Recheck, err
	}
	w, err = recipe.Wait(ctx, b.s, events, readyEvents)
	return false, w, err
}

// Leave implements recipes.DoubleBarrier.
func (b *DoubleBarrier) Leave(ctx context.Context) (recipes.Passage, error) {
	if !b.entered {
		return recipes.Passage{}, fmt.Errorf("naive: leave barrier %s: %w", b.path, recipes.ErrNotEntered)
	}
	b.entered = false
	p, err := b.leave(ctx)
	if b.me.Path != "" {
		_ = recipe.Remove(ctx, b.s, b.me.Path, b.opt.CleanupTimeout)
		b.me = backends.Node{}
	}
	if err != nil {
		return p, fmt.Errorf("naive: leave barrier %s: %w", b.path, recipe.WrapLost(recipes.ErrBarrierBroken, err))
	}
	return p, nil
}

func (b *DoubleBarrier) leave(ctx context.Context) (recipes.Passage, error) {
	var p recipes.Passage
	if err := b.s.Delete(ctx, b.me.Path); err != nil && !errors.Is(err, backends.ErrNoNode) {
		return p, err
	}
	b.me = backends.Node{}
	for first := true; ; first = false {
		empty, woke, err := b.drainOnce(ctx)
		if woke {
			p.Wakeups++
		}
		switch {
		case err != nil:
			return p, err
		case empty && first:
			b.cleanup(ctx) // most likely the last one out
			return p, nil
		case empty:
			return p, nil
		}
	}
}

// drainOnce lists the members with a watch; if any are left, it sleeps until
// the list changes.
func (b *DoubleBarrier) drainOnce(ctx context.Context) (empty, woke bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, events, err := b.s.ChildrenW(wctx, b.members)
	if errors.Is(err, backends.ErrNoNode) {
		return true, false, nil
	}
	if err != nil || len(children) == 0 {
		return err == nil, false, err
	}
	w, err := recipe.Wait(ctx, b.s, events, nil)
	return false, w == recipe.First, err
}

// cleanup removes the ready node and, best effort, the round's directories.
func (b *DoubleBarrier) cleanup(ctx context.Context) {
	_ = recipe.Remove(ctx, b.s, b.ready, b.opt.CleanupTimeout)
	_ = recipe.Remove(ctx, b.s, b.members, b.opt.CleanupTimeout)
	_ = recipe.Remove(ctx, b.s, b.path, b.opt.CleanupTimeout)
}
