package native

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Election returns the native family's election recipes:
// etcd's concurrency.Election. On ZooKeeper, whose Go client has no election
// recipe, every call returns an error matching recipes.ErrUnsupported.
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

// Latch is etcd's concurrency.Election on the backend session's client and
// lease.
//
// Algorithm (the library's): Campaign puts <path>/<lease-hex> with the lease
// if absent, then waits until every key under <path>/ created before its own
// is deleted, watching only the newest such key each time. Resign deletes
// the key. It is the recipes page's herd-free election with create
// revisions as sequence numbers.
//
// Herd behaviour: one notification per failover, to the next candidate in
// line, as in recipes/fair. Its requests bypass the instrument decorator:
// there are no client-side counts for it, and Leadership.Wakeups is 0; the
// recipe suite checks the one notification with the servers' counts.
//
// The concurrency.Session is built on the backend session's own lease
// (concurrency.WithLease) and is only ever orphaned, never closed: closing
// it would revoke the backend's lease. One key per lease per election: a
// session is one candidate.
type Latch struct {
	s     backends.Session
	path  string
	id    string
	opt   recipes.Options
	cs    *concurrency.Session
	el    *concurrency.Election
	term  *recipe.Term
	lead  recipes.Leadership
	ended bool
}

var _ recipes.Latch = (*Latch)(nil)

// NewLatch returns candidate id's latch for the native election at path. It
// makes no request.
func NewLatch(s backends.Session, path, id string, opts ...recipes.Option) *Latch {
	return &Latch{s: s, path: path, id: id, opt: recipes.NewOptions(opts...)}
}

// NewSelector returns candidate id's selector for the native election at
// path: one Latch (one Campaign) per term; a requeued candidate's new key is
// the newest, so turns go round-robin.
func NewSelector(s backends.Session, path, id string, opts ...recipes.Option) recipes.Selector {
	o := recipes.NewOptions(opts...)
	return recipe.NewSelector(func() recipes.Latch { return NewLatch(s, path, id, opts...) }, o.CleanupTimeout)
}

// etcdSession returns the concurrency.Session on s's own client and lease,
// or an error matching recipes.ErrUnsupported on any other backend.
func etcdSession(s backends.Session, what string) (*concurrency.Session, error) {
	inner := Underlying(s)
	es, ok := inner.(EtcdSession)
	if !ok {
		if _, zk := inner.(ZooKeeperSession); zk {
			return nil, fmt.Errorf("native: %s: go-zookeeper has no leader election recipe: %w", what, recipes.ErrUnsupported)
		}
		return nil, fmt.Errorf("native: %s on %T: %w", what, inner, recipes.ErrUnsupported)
	}
	// WithLease: no Grant. NewSession only registers one more keep-alive
	// listener on the client for the existing lease.
	return concurrency.NewSession(es.Client(), concurrency.WithLease(es.Lease()))
}

// Await implements recipes.Latch. Cancelling ctx stops Campaign, which
// resigns; this latch also deletes its key on a fresh bounded context in
// case the cancel hit the create itself.
func (l *Latch) Await(ctx context.Context) (recipes.Leadership, error) {
	switch {
	case l.ended:
		return recipes.Leadership{}, l.fail(recipes.ErrClosed)
	case l.term != nil && recipe.Closed(l.term.Lost()):
		return recipes.Leadership{}, l.fail(recipe.LostAs(recipes.ErrLeadershipLost))
	case l.term != nil:
		return l.lead, nil
	}
	if l.cs == nil {
		cs, err := etcdSession(l.s, "election "+l.path)
		if err != nil {
			return recipes.Leadership{}, err
		}
		l.cs, l.el = cs, concurrency.NewElection(cs, l.path)
	}
	if err := l.el.Campaign(ctx, l.id); err != nil {
		l.withdraw(ctx)
		if recipe.Closed(l.s.Done()) {
			err = fmt.Errorf("%w (%w)", backends.ErrSessionLost, err)
		}
		return recipes.Leadership{}, l.fail(err)
	}
	if recipe.Closed(l.s.Done()) {
		return recipes.Leadership{}, l.fail(backends.ErrSessionLost)
	}
	l.term = recipe.NewTerm(l.s.Done())
	l.lead = recipes.Leadership{Token: l.el.Rev(), Lost: l.term.Lost()}
	return l.lead, nil
}

// withdraw deletes this candidate's key, <path>/<lease-hex> as Campaign
// names it, on a fresh bounded context.
func (l *Latch) withdraw(ctx context.Context) {
	fctx, cancel := recipe.Fresh(ctx, l.opt.CleanupTimeout)
	defer cancel()
	key := fmt.Sprintf("%s/%x", l.path, l.cs.Lease())
	_, _ = l.cs.Client().Delete(fctx, key)
}

// Close implements recipes.Latch: it ends the term, resigns (deleting the
// key, which wakes only the next candidate) and orphans the
// concurrency.Session without revoking the lease.
func (l *Latch) Close(ctx context.Context) error {
	if l.ended {
		return nil
	}
	l.ended = true
	if l.term != nil {
		l.term.End()
	}
	if l.cs == nil {
		return nil
	}
	defer l.cs.Orphan()
	if l.term == nil || recipe.Closed(l.s.Done()) {
		return nil
	}
	fctx, cancel := recipe.Fresh(ctx, l.opt.CleanupTimeout)
	defer cancel()
	if err := l.el.Resign(fctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("native: close latch %s: %w", l.path, err)
	}
	return nil
}

func (l *Latch) fail(err error) error {
	return fmt.Errorf("native: await leadership %s: %w", l.path, recipe.WrapLost(recipes.ErrLeadershipLost, err))
}
