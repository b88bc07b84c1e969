package naive

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// leaderName is the one node of a naive election: whoever made it leads.
const leaderName = "leader"

// Election returns the naive family's election recipes.
func Election(opts ...recipes.Option) recipes.Election {
	return recipes.Election{
		Latch: func(s backends.Session, path, id string) recipes.Latch {
			return NewLatch(s, path, id, opts...)
		},
		Selector: func(s backends.Session, path, id string) recipes.Selector {
			return NewSelector(s, path, id, opts...)
		},
		Observer: func(s backends.Session, path string) recipes.Observer {
			return NewObserver(s, path, opts...)
		},
	}
}

// Latch is the create-to-grab election, the textbook herd.
//
// Algorithm: every candidate tries to create the ephemeral node
// <path>/leader holding its id; whoever succeeds leads until it deletes the
// node (Close) or its session ends. The others arm ExistsW on the node and
// sleep; on any wake-up they try the create again.
//
// Herd behaviour: every candidate watches the one leader node, so each
// leader loss wakes all N-1 candidates, all race to create, one wins and the
// rest re-arm their watches: N-2 wasted wake-ups and about 2(N-1) wasted
// requests per failover. There is no queue, so no order: the next leader is
// whoever's create lands first.
//
// Token: the leader node's create revision. A Latch is used by one goroutine
// on one session; candidate ids must be unique.
type Latch struct {
	s     backends.Session
	path  string
	node  string
	id    string
	opt   recipes.Options
	term  *recipe.Term
	lead  recipes.Leadership
	ended bool
}

var _ recipes.Latch = (*Latch)(nil)

// NewLatch returns candidate id's latch for the naive election at path. It
// makes no request.
func NewLatch(s backends.Session, path, id string, opts ...recipes.Option) *Latch {
	return &Latch{s: s, path: path, node: path + "/" + leaderName, id: id, opt: recipes.NewOptions(opts...)}
}

// NewSelector returns candidate id's selector for the naive election at path:
// one Latch per term. Requeueing is another create race, which the candidate
// that just deleted the node often wins again: turns are not round-robin.
func NewSelector(s backends.Session, path, id string, opts ...recipes.Option) recipes.Selector {
	o := recipes.NewOptions(opts...)
	return recipe.NewSelector(func() recipes.Latch { return NewLatch(s, path, id, opts...) }, o.CleanupTimeout)
}

// Await implements recipes.Latch. Cancelling ctx stops the wait at once; a
// create already sent runs to completion on a fresh bounded context and, if
// it made the node, the node is deleted before Await returns ctx's error.
func (l *Latch) Await(ctx context.Context) (recipes.Leadership, error) {
	switch {
	case l.ended:
		return recipes.Leadership{}, l.fail(recipes.ErrClosed)
	case l.term != nil && recipe.Closed(l.term.Lost()):
		return recipes.Leadership{}, l.fail(recipe.LostAs(recipes.ErrLeadershipLost))
	case l.term != nil:
		return l.lead, nil
	}
	wakeups, unknown := 0, false
	for {
		n, err := recipe.CreateIn(ctx, l.s, l.opt.CleanupTimeout, l.path, func(c context.Context) (backends.Node, error) {
			return l.s.Create(c, l.node, []byte(l.id))
		})
		switch {
		case err == nil:
			return l.elected(ctx, n, wakeups)
		case errors.Is(err, backends.ErrUnknownOutcome):
			unknown = true // the retry's ErrNodeExists may be our own node
			continue
		case !errors.Is(err, backends.ErrNodeExists):
			return recipes.Leadership{}, l.fail(err)
		case unknown:
			unknown = false
			if data, n, gerr := l.s.Get(ctx, l.node); gerr == nil && string(data) == l.id {
				return l.elected(ctx, n, wakeups)
			}
		}
		woke, err := l.waitGone(ctx)
		if err != nil {
			return recipes.Leadership{}, l.fail(err)
		}
		if woke {
			wakeups++
		}
	}
}

// waitGone watches the leader node and returns once a notification arrives
// (woke) or the node turns out to be gone already (not woke).
func (l *Latch) waitGone(ctx context.Context) (woke bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, _, events, err := l.s.ExistsW(wctx, l.node)
	if err != nil || !exists {
		return false, err
	}
	w, err := recipe.Wait(ctx, l.s, events, nil)
	return w == recipe.First, err
}

// elected starts the term of the node n this candidate made, giving the
// node back if the session died meanwhile or the token cannot be read.
func (l *Latch) elected(ctx context.Context, n backends.Node, wakeups int) (recipes.Leadership, error) {
	token, err := recipe.CreateRev(ctx, l.s, n)
	if err == nil && recipe.Closed(l.s.Done()) {
		err = backends.ErrSessionLost
	}
	if err != nil {
		_ = recipe.Remove(ctx, l.s, n.Path, l.opt.CleanupTimeout)
		return recipes.Leadership{}, l.fail(err)
	}
	l.term = recipe.NewTerm(l.s.Done())
	l.lead = recipes.Leadership{Token: token, Wakeups: wakeups, Lost: l.term.Lost()}
	return l.lead, nil
}

// Close implements recipes.Latch: it ends the term, then deletes the leader
// node if it is still this term's (same create revision), waking every
// candidate.
func (l *Latch) Close(ctx context.Context) error {
	if l.ended {
		return nil
	}
	l.ended = true
	if l.term == nil {
		return nil
	}
	l.term.End()
	if recipe.Closed(l.s.Done()) {
		return nil // the server removes the node with the session
	}
	fctx, cancel := recipe.Fresh(ctx, l.opt.CleanupTimeout)
	defer cancel()
	_, n, err := l.s.Get(fctx, l.node)
	switch {
	case errors.Is(err, backends.ErrNoNode) || errors.Is(err, backends.ErrSessionLost):
		return nil
	case err != nil:
		return fmt.Errorf("naive: close latch %s: %w", l.path, err)
	case n.CreateRev != l.lead.Token:
		return nil // a later leader's node: ours is gone already
	}
	if err := recipe.Remove(ctx, l.s, l.node, l.opt.CleanupTimeout); err != nil {
		return fmt.Errorf("naive: close latch %s: %w", l.path, err)
	}
	return nil
}

func (l *Latch) fail(err error) error {
	return fmt.Errorf("naive: await leadership %s: %w", l.path, recipe.WrapLost(recipes.ErrLeadershipLost, err))
}
