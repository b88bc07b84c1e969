package fair

import (
	"context"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// candidatePrefix starts the name of every candidate's sequential node, as
// "n_" does in the ZooKeeper recipes page.
const candidatePrefix = "n_"

// Election returns the fair family's election recipes: the herd-free
// election of the ZooKeeper recipes page.
//
// Algorithm: a candidate creates an ephemeral sequential node <path>/n_...
// holding its id and lists <path>'s children without a watch. If its node is
// the smallest, it leads. Otherwise it arms ExistsW on the node immediately
// before its own and sleeps; when that node goes it lists again (a
// predecessor that left is not necessarily the leader). It leads until it
// deletes its node (Close) or its session ends. A Selector makes one latch
// per term: a requeued candidate makes a new node, behind every candidate
// already queued, so turns go round-robin.
//
// Herd behaviour: each candidate watches only its predecessor and each node
// is watched by at most one candidate, so a leader loss wakes exactly one
// candidate, the next in line: one notification and two requests (list,
// then lead) per failover whatever N. Terms are given in sequence order.
//
// Token: the candidate node's create revision. A latch is used by one
// goroutine on one session.
func Election(opts ...recipes.Option) recipes.Election {
	return recipe.Election("fair", newCandidate, NewObserver, opts...)
}

// candidate is a fair latch's candidate: its id and, once made, its node.
type candidate struct {
	id string
	me backends.Node
}

func newCandidate(id string) recipe.Candidate { return &candidate{id: id} }

// Campaign implements recipe.Candidate. Cancelling ctx stops the wait at
// once and deletes the candidate's node on a fresh bounded context, which
// wakes only the candidate queued behind it.
func (c *candidate) Campaign(ctx context.Context, l *recipe.Latch) (token int64, wakeups int, err error) {
	token, wakeups, err = c.queue(ctx, l)
	if err != nil {
		if c.me.Path != "" {
			_ = recipe.Remove(ctx, l.S, c.me.Path, l.Timeout)
			c.me = backends.Node{}
		}
		return 0, 0, l.Fail(err)
	}
	return token, wakeups, nil
}

// queue creates the candidate's node and waits until it is the smallest.
func (c *candidate) queue(ctx context.Context, l *recipe.Latch) (token int64, wakeups int, err error) {
	s, path := l.S, l.Path
	me, err := recipe.CreateIn(ctx, s, l.Timeout, path, func(cctx context.Context) (backends.Node, error) {
		return s.CreateSequential(cctx, path, candidatePrefix, []byte(c.id))
	})
	if err != nil {
		return 0, 0, err
	}
	c.me = me
	for {
		children, err := s.Children(ctx, path)
		if err != nil {
			return 0, 0, err
		}
		i := recipe.IndexOf(children, me.Name)
		switch {
		case i < 0:
			return 0, 0, fmt.Errorf("candidate node %s vanished: %w", me.Name, recipes.ErrLeadershipLost)
		case i == 0:
			token, err := recipe.ElectedToken(ctx, s, me)
			return token, wakeups, err
		}
		woke, err := recipe.WaitGone(ctx, s, children[i-1].Path)
		if err != nil {
			return 0, 0, err
		}
		if woke {
			wakeups++
		}
	}
}

// Withdraw implements recipe.Candidate: it deletes the candidate's node,
// waking only the next candidate in line.
func (c *candidate) Withdraw(ctx context.Context, l *recipe.Latch, _ bool) error {
	if c.me.Path == "" {
		return nil
	}
	err := recipe.Remove(ctx, l.S, c.me.Path, l.Timeout)
	c.me = backends.Node{}
	if err != nil {
		return l.CloseFailed(err)
	}
	return nil
}
