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

// Election returns the fair family's election recipes.
func Election(opts ...recipes.Option) recipes.Election {
	return recipe.Election(NewLatch, NewSelector, NewObserver, opts...)
}

// Latch is the herd-free election of the ZooKeeper recipes page.
//
// Algorithm: a candidate creates an ephemeral sequential node <path>/n_...
// holding its id and lists <path>'s children without a watch. If its node is
// the smallest, it leads. Otherwise it arms ExistsW on the node immediately
// before its own and sleeps; when that node goes it lists again (a
// predecessor that left is not necessarily the leader). It leads until it
// deletes its node (Close) or its session ends.
//
// Herd behaviour: each candidate watches only its predecessor and each node
// is watched by at most one candidate, so a leader loss wakes exactly one
// candidate, the next in line: one notification and two requests (list,
// then lead) per failover whatever N. Terms are given in sequence order.
//
// Token: the candidate node's create revision. A Latch is used by one
// goroutine on one session.
type Latch struct {
	c  recipe.Candidacy
	id string
	me backends.Node
}

var _ recipes.Latch = (*Latch)(nil)

// NewLatch returns candidate id's latch for the fair election at path. It
// makes no request.
func NewLatch(s backends.Session, path, id string, opts ...recipes.Option) *Latch {
	return &Latch{c: recipe.NewCandidacy("fair", s, path, recipes.NewOptions(opts...).CleanupTimeout), id: id}
}

// NewSelector returns candidate id's selector for the fair election at path:
// one Latch per term. A requeued candidate makes a new node, behind every
// candidate already queued, so turns go round-robin.
func NewSelector(s backends.Session, path, id string, opts ...recipes.Option) recipes.Selector {
	return recipe.SelectorOf(NewLatch, s, path, id, opts...)
}

// Await implements recipes.Latch. Cancelling ctx stops the wait at once and
// deletes the candidate's node on a fresh bounded context, which wakes only
// the candidate queued behind it.
func (l *Latch) Await(ctx context.Context) (recipes.Leadership, error) {
	return l.c.Await(ctx, l.campaign)
}

func (l *Latch) campaign(ctx context.Context) (token int64, wakeups int, err error) {
	token, wakeups, err = l.queue(ctx)
	if err != nil {
		if l.me.Path != "" {
			_ = recipe.Remove(ctx, l.c.S, l.me.Path, l.c.Timeout)
			l.me = backends.Node{}
		}
		return 0, 0, l.c.Fail(err)
	}
	return token, wakeups, nil
}

// queue creates the candidate's node and waits until it is the smallest.
func (l *Latch) queue(ctx context.Context) (token int64, wakeups int, err error) {
	s, path := l.c.S, l.c.Path
	me, err := recipe.CreateIn(ctx, s, l.c.Timeout, path, func(c context.Context) (backends.Node, error) {
		return s.CreateSequential(c, path, candidatePrefix, []byte(l.id))
	})
	if err != nil {
		return 0, 0, err
	}
	l.me = me
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

// Close implements recipes.Latch: it ends the term, then deletes the
// candidate's node, waking only the next candidate in line.
func (l *Latch) Close(ctx context.Context) error {
	if open, _ := l.c.End(); !open || l.me.Path == "" {
		return nil
	}
	err := recipe.Remove(ctx, l.c.S, l.me.Path, l.c.Timeout)
	l.me = backends.Node{}
	if err != nil {
		return l.c.CloseFailed(err)
	}
	return nil
}
