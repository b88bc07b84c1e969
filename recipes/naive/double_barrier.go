package naive

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
	r recipe.Round
}

var _ recipes.DoubleBarrier = (*DoubleBarrier)(nil)

// NewDoubleBarrier returns one participant of the round at path for n
// participants. It makes no request.
func NewDoubleBarrier(s backends.Session, path string, n int, opts ...recipes.Option) *DoubleBarrier {
	return &DoubleBarrier{r: recipe.NewRound("naive", s, path, n, recipes.NewOptions(opts...).CleanupTimeout)}
}

// Enter implements recipes.DoubleBarrier.
func (b *DoubleBarrier) Enter(ctx context.Context) (recipes.Passage, error) {
	return b.r.Enter(ctx, b.gather)
}

// gather counts the members until N arrived or the ready node appears.
func (b *DoubleBarrier) gather(ctx, rctx context.Context, readyEvents <-chan backends.Event) (recipes.Passage, error) {
	var p recipes.Passage
	for {
		full, w, err := b.countOnce(ctx, readyEvents)
		if w != recipe.Recheck {
			p.Wakeups++
		}
		switch {
		case err != nil:
			return p, err
		case full:
			return p, b.r.CreateReady(ctx)
		case w == recipe.Second:
			return p, nil // the ready node appeared
		case w == recipe.Recheck:
			fired, closed := pollWatch(readyEvents)
			if fired {
				p.Wakeups++
				return p, nil
			}
			if closed { // the backend dropped the ready watch: arm it again
				var ready bool
				if ready, _, readyEvents, err = b.r.S.ExistsW(rctx, b.r.Ready); err != nil || ready {
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
	children, events, err := b.r.S.ChildrenW(wctx, b.r.Members)
	if err != nil || len(children) >= b.r.N {
		return err == nil, recipe.Recheck, err
	}
	w, err = recipe.Wait(ctx, b.r.S, events, readyEvents)
	return false, w, err
}

// Leave implements recipes.DoubleBarrier.
func (b *DoubleBarrier) Leave(ctx context.Context) (recipes.Passage, error) {
	return b.r.Leave(ctx, b.leave)
}

func (b *DoubleBarrier) leave(ctx context.Context) (recipes.Passage, error) {
	var p recipes.Passage
	if err := b.r.DeleteMe(ctx); err != nil {
		return p, err
	}
	for first := true; ; first = false {
		empty, woke, err := b.drainOnce(ctx)
		if woke {
			p.Wakeups++
		}
		switch {
		case err != nil:
			return p, err
		case empty && first:
			b.r.Cleanup(ctx) // most likely the last one out
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
	children, events, err := b.r.S.ChildrenW(wctx, b.r.Members)
	if errors.Is(err, backends.ErrNoNode) {
		return true, false, nil
	}
	if err != nil || len(children) == 0 {
		return err == nil, false, err
	}
	w, err := recipe.Wait(ctx, b.r.S, events, nil)
	return false, w == recipe.First, err
}
