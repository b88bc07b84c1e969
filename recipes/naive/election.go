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

// leaderNode is the path of the leader node of the naive election at path.
func leaderNode(path string) string { return path + "/" + leaderName }

// Election returns the naive family's election recipes: the
// create-to-grab election, the textbook herd.
//
// Algorithm: every candidate tries to create the ephemeral node
// <path>/leader holding its id; whoever succeeds leads until it deletes the
// node (Close) or its session ends. The others arm ExistsW on the node and
// sleep; on any wake-up they try the create again. A Selector makes one
// latch per term: requeueing is another create race, which the candidate
// that just deleted the node often wins again, so turns are not
// round-robin.
//
// Herd behaviour: every candidate watches the one leader node, so each
// leader loss wakes all N-1 candidates, all race to create, one wins and the
// rest re-arm their watches: N-2 wasted wake-ups and about 2(N-1) wasted
// requests per failover. There is no queue, so no order: the next leader is
// whoever's create lands first.
//
// Token: the leader node's create revision. A latch is used by one goroutine
// on one session; candidate ids must be unique.
func Election(opts ...recipes.Option) recipes.Election {
	return recipe.Election("naive", newCandidate, NewObserver, opts...)
}

// candidate is a naive latch's candidate, known by its id.
type candidate struct{ id string }

func newCandidate(id string) recipe.Candidate { return &candidate{id: id} }

// Campaign implements recipe.Candidate. Cancelling ctx stops the wait at
// once; a create already sent runs to completion on a fresh bounded context
// and, if it made the node, the node is deleted before Await returns ctx's
// error.
func (c *candidate) Campaign(ctx context.Context, l *recipe.Latch) (token int64, wakeups int, err error) {
	s, node := l.S, leaderNode(l.Path)
	unknown := false
	for {
		n, err := recipe.CreateIn(ctx, s, l.Timeout, l.Path, func(cctx context.Context) (backends.Node, error) {
			return s.Create(cctx, node, []byte(c.id))
		})
		switch {
		case err == nil:
			return elected(ctx, l, n, wakeups)
		case errors.Is(err, backends.ErrUnknownOutcome):
			unknown = true // the retry's ErrNodeExists may be our own node
			continue
		case !errors.Is(err, backends.ErrNodeExists):
			return 0, 0, l.Fail(err)
		case unknown:
			unknown = false
			if data, n, gerr := s.Get(ctx, node); gerr == nil && string(data) == c.id {
				return elected(ctx, l, n, wakeups)
			}
		}
		woke, err := recipe.WaitGone(ctx, s, node)
		if err != nil {
			return 0, 0, l.Fail(err)
		}
		if woke {
			wakeups++
		}
	}
}

// elected reads the token of the node n the candidate made, giving the
// node back if the session died meanwhile or the token cannot be read.
func elected(ctx context.Context, l *recipe.Latch, n backends.Node, wakeups int) (int64, int, error) {
	token, err := recipe.ElectedToken(ctx, l.S, n)
	if err != nil {
		_ = recipe.Remove(ctx, l.S, n.Path, l.Timeout)
		return 0, 0, l.Fail(err)
	}
	return token, wakeups, nil
}

// Withdraw implements recipe.Candidate: once a term began, it deletes the
// leader node if it is still this term's (same create revision), waking
// every candidate.
func (c *candidate) Withdraw(ctx context.Context, l *recipe.Latch, led bool) error {
	if !led {
		return nil
	}
	s, node := l.S, leaderNode(l.Path)
	if recipe.Closed(s.Done()) {
		return nil // the server removes the node with the session
	}
	fctx, cancel := recipe.Fresh(ctx, l.Timeout)
	defer cancel()
	_, n, err := s.Get(fctx, node)
	switch {
	case errors.Is(err, backends.ErrNoNode) || errors.Is(err, backends.ErrSessionLost):
		return nil
	case err != nil:
		return l.CloseFailed(err)
	case n.CreateRev != l.Token():
		return nil // a later leader's node: ours is gone already
	}
	if err := recipe.Remove(ctx, s, node, l.Timeout); err != nil {
		return l.CloseFailed(err)
	}
	return nil
}
