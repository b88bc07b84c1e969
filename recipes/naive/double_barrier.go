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

// NewDoubleBarrier returns one participant of the double barrier as it is
// usually first written (and as Curator's DistributedDoubleBarrier enters),
// where everyone counts the members: of the round at path for n
// participants. It makes no request.
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
// (see recipes/fair.NewDoubleBarrier for why and its failure modes); the first
// participant that sees the members empty right after its own departure
// deletes it and the round's directories.
func NewDoubleBarrier(s backends.Session, path string, n int, opts ...recipes.Option) recipes.DoubleBarrier {
	return recipe.NewRound("naive", gatherRound, leaveRound, s, path, n, opts...)
}

// gatherRound counts the members until N arrived or the ready node appears.
func gatherRound(ctx, readyCtx context.Context, r *recipe.Round, readyEvents <-chan backends.Event) (wakeups int, err error) {
	for {
		full, w, err := countOnce(ctx, r, readyEvents)
		if w != recipe.Recheck {
			wakeups++
		}
		switch {
		case err != nil:
			return wakeups, err
		case full:
			return wakeups, r.CreateReady(ctx)
		case w == recipe.Second:
			return wakeups, nil // the ready node appeared
		case w == recipe.Recheck:
			fired, closed := pollWatch(readyEvents)
			if fired {
				wakeups++
				return wakeups, nil
			}
			if closed { // the backend dropped the ready watch: arm it again
				var ready bool
				if ready, _, readyEvents, err = r.S.ExistsW(readyCtx, r.Ready); err != nil || ready {
					return wakeups, err
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
func countOnce(ctx context.Context, r *recipe.Round, readyEvents <-chan backends.Event) (full bool, w recipe.Woke, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, events, err := r.S.ChildrenW(wctx, r.Members)
	if err != nil || len(children) >= r.N {
		return err == nil, recipe.Recheck, err
	}
	w, err = recipe.Wait(ctx, r.S, events, readyEvents)
	return false, w, err
}

// leaveRound deletes this participant's node, then waits until the members
// are gone.
func leaveRound(ctx context.Context, r *recipe.Round) (wakeups int, err error) {
	if err := r.DeleteMe(ctx); err != nil {
		return 0, err
	}
	for first := true; ; first = false {
		empty, woke, err := drainOnce(ctx, r)
		if woke {
			wakeups++
		}
		switch {
		case err != nil:
			return wakeups, err
		case empty && first:
			r.Cleanup(ctx) // most likely the last one out
			return wakeups, nil
		case empty:
			return wakeups, nil
		}
	}
}

// drainOnce lists the members with a watch; if any are left, it sleeps until
// the list changes.
func drainOnce(ctx context.Context, r *recipe.Round) (empty, woke bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, events, err := r.S.ChildrenW(wctx, r.Members)
	if errors.Is(err, backends.ErrNoNode) {
		return true, false, nil
	}
	if err != nil || len(children) == 0 {
		return err == nil, false, err
	}
	w, err := recipe.Wait(ctx, r.S, events, nil)
	return false, w == recipe.First, err
}
