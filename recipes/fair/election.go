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
	s     backends.Session
	path  string
	id    string
	opt   recipes.Options
	me    backends.Node
	term  *recipe.Term
	lead  recipes.Leadership
	ended bool
}

var _ recipes.Latch = (*Latch)(nil)

// NewLatch returns candidate id's latch for the fair election at path. It
// makes no request.
func NewLatch(s backends.Session, path, id string, opts ...recipes.Option) *Latch {
	return &Latch{s: s, path: path, id: id, opt: recipes.NewOptions(opts...)}
}

// NewSelector returns candidate id's selector for the fair election at path:
// one Latch per term. A requeued candidate makes a new node, behind every
// candidate already queued, so turns go round-robin.
func NewSelector(s backends.Session, path, id string, opts ...recipes.Option) recipes.Selector {
	o := recipes.NewOptions(opts...)
	return recipe.NewSelector(func() recipes.Latch { return NewLatch(s, path, id, opts...) }, o.CleanupTimeout)
}

// Await implements recipes.Latch. Cancelling ctx stops the wait at once and
// deletes the candidate's node on a fresh bounded context, which wakes only
// the candidate queued behind it.
func (l *Latch) Await(ctx context.Context) (recipes.Leadership, error) {
	switch {
	case l.ended:
		return recipes.Leadership{}, l.fail(recipes.ErrClosed)
	case l.term != nil && recipe.Closed(l.term.Lost()):
		return recipes.Leadership{}, l.fail(recipe.LostAs(recipes.ErrLeadershipLost))
	case l.term != nil:
		return l.lead, nil
	}
	lead, err := l.await(ctx)
	if err != nil {
		if l.me.Path != "" {
			_ = recipe.Remove(ctx, l.s, l.me.Path, l.opt.CleanupTimeout)
			l.me = backends.Node{}
		}
		return recipes.Leadership{}, l.fail(err)
	}
	return lead, nil
}

func (l *Latch) await(ctx context.Context) (recipes.Leadership, error) {
	me, err := recipe.CreateIn(ctx, l.s, l.opt.CleanupTimeout, l.path, func(c context.Context) (backends.Node, error) {
		return l.s.CreateSequential(c, l.path, candidatePrefix, []byte(l.id))
	})
	if err != nil {
		return recipes.Leadership{}, err
	}
	l.me = me
	wakeups := 0
	for {
		children, err := l.s.Children(ctx, l.path)
		if err != nil {
			return recipes.Leadership{}, err
		}
		i := recipe.IndexOf(children, me.Name)
		switch {
		case i < 0:
			return recipes.Leadership{}, fmt.Errorf("candidate node %s vanished: %w", me.Name, recipes.ErrLeadershipLost)
		case i == 0:
			return l.elected(ctx, wakeups)
		}
		woke, err := l.waitGone(ctx, children[i-1].Path)
		if err != nil {
			return recipes.Leadership{}, err
		}
		if woke {
			wakeups++
		}
	}
}

// waitGone watches the predecessor pred and returns once a notification
// arrives (woke) or pred turns out to be gone already (not woke).
func (l *Latch) waitGone(ctx context.Context, pred string) (woke bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, _, events, err := l.s.ExistsW(wctx, pred)
	if err != nil || !exists {
		return false, err
	}
	w, err := recipe.Wait(ctx, l.s, events, nil)
	return w == recipe.First, err
}

func (l *Latch) elected(ctx context.Context, wakeups int) (recipes.Leadership, error) {
	token, err := recipe.CreateRev(ctx, l.s, l.me)
	if err == nil && recipe.Closed(l.s.Done()) {
		err = backends.ErrSessionLost
	}
	if err != nil {
		return recipes.Leadership{}, err
	}
	l.term = recipe.NewTerm(l.s.Done())
	l.lead = recipes.Leadership{Token: token, Wakeups: wakeups, Lost: l.term.Lost()}
	return l.lead, nil
}

// Close implements recipes.Latch: it ends the term, then deletes the
// candidate's node, waking only the next candidate in line.
func (l *Latch) Close(ctx context.Context) error {
	if l.ended {
		return nil
	}
	l.ended = true
	if l.term != nil {
		l.term.End()
	}
	if l.me.Path == "" {
		return nil
	}
	err := recipe.Remove(ctx, l.s, l.me.Path, l.opt.CleanupTimeout)
	l.me = backends.Node{}
	if err != nil {
		return fmt.Errorf("fair: close latch %s: %w", l.path, err)
	}
	return nil
}

func (l *Latch) fail(err error) error {
	return fmt.Errorf("fair: await leadership %s: %w", l.path, recipe.WrapLost(recipes.ErrLeadershipLost, err))
}
