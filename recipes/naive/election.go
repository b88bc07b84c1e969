package naive

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// leaderName is the one node of a naive election: whoever made it leads.
const leaderName = "leader"

// Election returns the naive family's election recipes.
func Election(opts ...recipes.Option) recipes.Election {
	return recipe.Election(NewLatch, NewSelector, NewObserver, opts...)
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
	c    recipe.Candidacy
	node string
	id   string
}

var _ recipes.Latch = (*Latch)(nil)

// NewLatch returns candidate id's latch for the naive election at path. It
// makes no request.
func NewLatch(s backends.Session, path, id string, opts ...recipes.Option) *Latch {
	return &Latch{c: recipe.NewCandidacy("naive", s, path, recipes.NewOptions(opts...).CleanupTimeout),
		node: path + "/" + leaderName, id: id}
}

// NewSelector returns candidate id's selector for the naive election at path:
// one Latch per term. Requeueing is another create race, which the candidate
// that just deleted the node often wins again: turns are not round-robin.
func NewSelector(s backends.Session, path, id string, opts ...recipes.Option) recipes.Selector {
	return recipe.SelectorOf(NewLatch, s, path, id, opts...)
}

// Await implements recipes.Latch. Cancelling ctx stops the wait at once; a
// create already sent runs to completion on a fresh bounded context and, if
// it made the node, the node is deleted before Await returns ctx's error.
func (l *Latch) Await(ctx context.Context) (recipes.Leadership, error) {
	return l.c.Await(ctx, l.campaign)
}

func (l *Latch) campaign(ctx context.Context) (token int64, wakeups int, err error) {
	s := l.c.S
	unknown := false
	for {
		n, err := recipe.CreateIn(ctx, s, l.c.Timeout, l.c.Path, func(c context.Context) (backends.Node, error) {
			return s.Create(c, l.node, []byte(l.id))
		})
		switch {
		case err == nil:
			return l.elected(ctx, n, wakeups)
		case errors.Is(err, backends.ErrUnknownOutcome):
			unknown = true // the retry's ErrNodeExists may be our own node
			continue
		case !errors.Is(err, backends.ErrNodeExists):
			return 0, 0, l.c.Fail(err)
		case unknown:
			unknown = false
			if data, n, gerr := s.Get(ctx, l.node); gerr == nil && string(data) == l.id {
				return l.elected(ctx, n, wakeups)
			}
		}
		woke, err := recipe.WaitGone(ctx, s, l.node)
		if err != nil {
			return 0, 0, l.c.Fail(err)
		}
		if woke {
			wakeups++
		}
	}
}

// elected reads the token of the node n this candidate made, giving the
// node back if the session died meanwhile or the token cannot be read.
func (l *Latch) elected(ctx context.Context, n backends.Node, wakeups int) (int64, int, error) {
	token, err := recipe.ElectedToken(ctx, l.c.S, n)
	if err != nil {
		_ = recipe.Remove(ctx, l.c.S, n.Path, l.c.Timeout)
		return 0, 0, l.c.Fail(err)
	}
	return token, wakeups, nil
}

// Close implements recipes.Latch: it ends the term, then deletes the leader
// node if it is still this term's (same create revision), waking every
// candidate.
func (l *Latch) Close(ctx context.Context) error {
	if open, led := l.c.End(); !open || !led {
		return nil
	}
	s := l.c.S
	if recipe.Closed(s.Done()) {
		return nil // the server removes the node with the session
	}
	fctx, cancel := recipe.Fresh(ctx, l.c.Timeout)
	defer cancel()
	_, n, err := s.Get(fctx, l.node)
	switch {
	case errors.Is(err, backends.ErrNoNode) || errors.Is(err, backends.ErrSessionLost):
		return nil
	case err != nil:
		return l.c.CloseFailed(err)
	case n.CreateRev != l.c.Token():
		return nil // a later leader's node: ours is gone already
	}
	if err := recipe.Remove(ctx, s, l.node, l.c.Timeout); err != nil {
		return l.c.CloseFailed(err)
	}
	return nil
}
