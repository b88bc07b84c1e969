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

// Election returns the native family's election recipes: etcd's
// concurrency.Election on the backend session's client and lease. On
// ZooKeeper, whose Go client has no election recipe, every call returns an
// error matching recipes.ErrUnsupported.
//
// Algorithm (the library's): Campaign puts <path>/<lease-hex> with the lease
// if absent, then waits until every key under <path>/ created before its own
// is deleted, watching only the newest such key each time. Resign deletes
// the key. It is the recipes page's herd-free election with create
// revisions as sequence numbers. A Selector makes one latch (one Campaign)
// per term; a requeued candidate's new key is the newest, so turns go
// round-robin.
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
func Election(opts ...recipes.Option) recipes.Election {
	return recipe.Election("native", newCandidate, NewObserver, opts...)
}

// candidate is a native latch's candidate: its id and, once it campaigned,
// its concurrency session and election.
type candidate struct {
	id string
	cs *concurrency.Session
	el *concurrency.Election
}

func newCandidate(id string) recipe.Candidate { return &candidate{id: id} }

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

// Campaign implements recipe.Candidate. Cancelling ctx stops the library's
// Campaign, which resigns; the candidate also deletes its key on a fresh
// bounded context in case the cancel hit the create itself.
func (c *candidate) Campaign(ctx context.Context, l *recipe.Latch) (token int64, wakeups int, err error) {
	s := l.S
	if c.cs == nil {
		cs, err := etcdSession(s, "election "+l.Path)
		if err != nil {
			return 0, 0, err
		}
		c.cs, c.el = cs, concurrency.NewElection(cs, l.Path)
	}
	if err := c.el.Campaign(ctx, c.id); err != nil {
		c.withdraw(ctx, l)
		if recipe.Closed(s.Done()) {
			err = fmt.Errorf("%w (%w)", backends.ErrSessionLost, err)
		}
		return 0, 0, l.Fail(err)
	}
	if recipe.Closed(s.Done()) {
		return 0, 0, l.Fail(backends.ErrSessionLost)
	}
	return c.el.Rev(), 0, nil
}

// withdraw deletes this candidate's key, <path>/<lease-hex> as Campaign
// names it, on a fresh bounded context.
func (c *candidate) withdraw(ctx context.Context, l *recipe.Latch) {
	fctx, cancel := recipe.Fresh(ctx, l.Timeout)
	defer cancel()
	key := fmt.Sprintf("%s/%x", l.Path, c.cs.Lease())
	_, _ = c.cs.Client().Delete(fctx, key)
}

// Withdraw implements recipe.Candidate: it resigns (deleting the key, which
// wakes only the next candidate) and orphans the concurrency.Session
// without revoking the lease.
func (c *candidate) Withdraw(ctx context.Context, l *recipe.Latch, led bool) error {
	if c.cs == nil {
		return nil
	}
	defer c.cs.Orphan()
	if !led || recipe.Closed(l.S.Done()) {
		return nil
	}
	fctx, cancel := recipe.Fresh(ctx, l.Timeout)
	defer cancel()
	if err := c.el.Resign(fctx); err != nil && !errors.Is(err, context.Canceled) {
		return l.CloseFailed(err)
	}
	return nil
}
