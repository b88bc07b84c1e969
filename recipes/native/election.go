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
	return recipe.Election(NewLatch, NewSelector, NewObserver, opts...)
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
	c  recipe.Candidacy
	id string
	cs *concurrency.Session
	el *concurrency.Election
}

var _ recipes.Latch = (*Latch)(nil)

// NewLatch returns candidate id's latch for the native election at path. It
// makes no request.
func NewLatch(s backends.Session, path, id string, opts ...recipes.Option) *Latch {
	return &Latch{c: recipe.NewCandidacy("native", s, path, recipes.NewOptions(opts...).CleanupTimeout), id: id}
}

// NewSelector returns candidate id's selector for the native election at
// path: one Latch (one Campaign) per term; a requeued candidate's new key is
// the newest, so turns go round-robin.
func NewSelector(s backends.Session, path, id string, opts ...recipes.Option) recipes.Selector {
	return recipe.SelectorOf(NewLatch, s, path, id, opts...)
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
	return l.c.Await(ctx, l.campaign)
}

func (l *Latch) campaign(ctx context.Context) (token int64, wakeups int, err error) {
	s := l.c.S
	if l.cs == nil {
		cs, err := etcdSession(s, "election "+l.c.Path)
		if err != nil {
			return 0, 0, err
		}
		l.cs, l.el = cs, concurrency.NewElection(cs, l.c.Path)
	}
	if err := l.el.Campaign(ctx, l.id); err != nil {
		l.withdraw(ctx)
		if recipe.Closed(s.Done()) {
			err = fmt.Errorf("%w (%w)", backends.ErrSessionLost, err)
		}
		return 0, 0, l.c.Fail(err)
	}
	if recipe.Closed(s.Done()) {
		return 0, 0, l.c.Fail(backends.ErrSessionLost)
	}
	return l.el.Rev(), 0, nil
}

// withdraw deletes this candidate's key, <path>/<lease-hex> as Campaign
// names it, on a fresh bounded context.
func (l *Latch) withdraw(ctx context.Context) {
	fctx, cancel := recipe.Fresh(ctx, l.c.Timeout)
	defer cancel()
	key := fmt.Sprintf("%s/%x", l.c.Path, l.cs.Lease())
	_, _ = l.cs.Client().Delete(fctx, key)
}

// Close implements recipes.Latch: it ends the term, resigns (deleting the
// key, which wakes only the next candidate) and orphans the
// concurrency.Session without revoking the lease.
func (l *Latch) Close(ctx context.Context) error {
	open, led := l.c.End()
	if !open || l.cs == nil {
		return nil
	}
	defer l.cs.Orphan()
	if !led || recipe.Closed(l.c.S.Done()) {
		return nil
	}
	fctx, cancel := recipe.Fresh(ctx, l.c.Timeout)
	defer cancel()
	if err := l.el.Resign(fctx); err != nil && !errors.Is(err, context.Canceled) {
		return l.c.CloseFailed(err)
	}
	return nil
}
