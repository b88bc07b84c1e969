package recipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// Selector is recipes.Selector built on latches, the way Curator builds
// LeaderSelector on a mutex: each term is one fresh Latch, awaited, held for
// the callback, and closed. Requeueing is volunteering again with a new
// latch; whether that is round-robin depends on the latch (a queue of
// sequential nodes puts the requeued candidate last; a create race does not).
type Selector struct {
	newLatch func() recipes.Latch
	timeout  time.Duration
}

var _ recipes.Selector = (*Selector)(nil)

// NewSelector returns a Selector that makes one latch per term with
// newLatch and closes each on a fresh context bounded by cleanupTimeout.
func NewSelector(newLatch func() recipes.Latch, cleanupTimeout time.Duration) *Selector {
	return &Selector{newLatch: newLatch, timeout: cleanupTimeout}
}

// Run implements recipes.Selector.
func (sel *Selector) Run(ctx context.Context, takeLeadership func(ctx context.Context) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := sel.newLatch()
		lead, err := l.Await(ctx)
		if err != nil {
			sel.close(ctx, l)
			return err
		}
		lost, ferr := sel.term(ctx, lead, takeLeadership)
		cerr := sel.close(ctx, l)
		switch {
		case lost && (ferr == nil || (errors.Is(ferr, context.Canceled) && ctx.Err() == nil)):
			// The callback stopped because the term was lost, not by choice.
			return LostAs(recipes.ErrLeadershipLost)
		case ferr != nil:
			return ferr
		case cerr != nil && !errors.Is(cerr, backends.ErrSessionLost):
			return fmt.Errorf("selector: give up leadership: %w", cerr)
		}
	}
}

// term runs takeLeadership with a context that ends with the term, and
// reports whether the term was lost (session ended) before it returned.
func (sel *Selector) term(ctx context.Context, lead recipes.Leadership,
	takeLeadership func(ctx context.Context) error) (lost bool, err error) {
	tctx, cancel := context.WithCancel(ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-lead.Lost:
			cancel()
		case <-stop:
		}
	}()
	err = takeLeadership(tctx)
	close(stop)
	cancel()
	return Closed(lead.Lost), err
}

func (sel *Selector) close(ctx context.Context, l recipes.Latch) error {
	cctx, cancel := Fresh(ctx, sel.timeout)
	defer cancel()
	return l.Close(cctx)
}
