package fair

import (
	"context"
	"errors"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// DefaultPoll is how often a PollingBarrier re-reads the barrier node when
// its constructor is given no interval.
const DefaultPoll = 50 * time.Millisecond

// NewPollingBarrierFactory adapts NewPollingBarrier to
// recipes.BarrierFactory; poll <= 0 means DefaultPoll.
func NewPollingBarrierFactory(poll time.Duration, opts ...recipes.Option) recipes.BarrierFactory {
	return func(s backends.Session, path string) recipes.Barrier {
		return NewPollingBarrier(s, path, poll, opts...)
	}
}

// PollingBarrier is the simple barrier without a watch: what a client does
// on a store it cannot watch. Set and Remove are Barrier's.
//
// Algorithm: Wait reads <path> (Get); if it is absent the barrier is down,
// else it sleeps poll and reads again.
//
// Cost: no notification at all, but one read per poll interval per waiter
// for as long as the barrier is up, so a waiter's requests grow with the
// wait (about wait/poll + 1) and the servers answer N of them every
// interval; a waiter passes up to poll after the barrier fell (poll/2 on
// average) instead of one notification's trip. Barrier (the watch) costs
// one ExistsW and one notification a waiter whatever the wait. It lives
// beside Barrier, which it extends, not in recipes/naive: it wakes nobody.
type PollingBarrier struct {
	*Barrier
	poll time.Duration
}

var _ recipes.Barrier = (*PollingBarrier)(nil)

// NewPollingBarrier returns the polling barrier at path for session s,
// reading every poll (<= 0: DefaultPoll). It makes no request.
func NewPollingBarrier(s backends.Session, path string, poll time.Duration, opts ...recipes.Option) *PollingBarrier {
	if poll <= 0 {
		poll = DefaultPoll
	}
	return &PollingBarrier{Barrier: NewBarrier(s, path, opts...), poll: poll}
}

// Wait implements recipes.Barrier: it returns once a read finds the barrier
// down, when ctx is done (ctx's error) or when the session is lost
// (ErrBarrierBroken).
func (b *PollingBarrier) Wait(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		if _, _, err := recipe.Receive(ctx, b.s, t.C); err != nil {
			return b.fail("wait", err)
		}
		_, _, err := b.s.Get(ctx, b.path)
		switch {
		case errors.Is(err, backends.ErrNoNode):
			return nil
		case err != nil:
			return b.fail("wait", err)
		}
		t.Reset(b.poll)
	}
}
