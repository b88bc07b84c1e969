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

// Observer watches etcd's concurrency.Election with the library's own
// Leader and Observe.
//
// Algorithm (the library's): Observe reads the oldest key under <path>/,
// then watches that key alone until it is deleted, and repeats (with a
// prefix watch while the election is empty).
//
// Herd behaviour: like recipes/fair's observer, one notification per
// observer per failover, and none when candidates behind the leader come
// and go. Each Next starts its own Observe (one read and one watch) and
// stops it on return. Its requests bypass the instrument decorator; the
// recipe suite checks its notifications with the servers' counts.
type Observer struct {
	s    backends.Session
	path string
	cs   *concurrency.Session
	el   *concurrency.Election
}

var _ recipes.Observer = (*Observer)(nil)

// NewObserver returns an observer of the native election at path. It makes
// no request; on ZooKeeper its calls return an error matching
// recipes.ErrUnsupported.
func NewObserver(s backends.Session, path string, _ ...recipes.Option) *Observer {
	return &Observer{s: s, path: path}
}

func (o *Observer) election() (*concurrency.Election, error) {
	if o.el == nil {
		cs, err := etcdSession(o.s, "observe "+o.path)
		if err != nil {
			return nil, err
		}
		o.cs, o.el = cs, concurrency.NewElection(cs, o.path)
		go func() { // orphan the keep-alive listener with the session
			<-o.s.Done()
			cs.Orphan()
		}()
	}
	return o.el, nil
}

// Leader implements recipes.Observer.
func (o *Observer) Leader(ctx context.Context) (recipes.LeaderInfo, error) {
	el, err := o.election()
	if err != nil {
		return recipes.LeaderInfo{}, err
	}
	resp, err := el.Leader(ctx)
	switch {
	case errors.Is(err, concurrency.ErrElectionNoLeader):
		return recipes.LeaderInfo{}, o.fail(recipes.ErrNoLeader)
	case err != nil:
		return recipes.LeaderInfo{}, o.fail(err)
	}
	kv := resp.Kvs[0]
	return recipes.LeaderInfo{ID: string(kv.Value), Token: kv.CreateRevision}, nil
}

// Next implements recipes.Observer. Cancelling ctx stops the library's
// Observe goroutine and its watch.
func (o *Observer) Next(ctx context.Context, after recipes.LeaderInfo) (recipes.LeaderInfo, error) {
	el, err := o.election()
	if err != nil {
		return recipes.LeaderInfo{}, err
	}
	for {
		octx, cancel := context.WithCancel(ctx)
		for resp := range el.Observe(octx) {
			kv := resp.Kvs[0]
			if kv.CreateRevision != after.Token {
				cancel()
				return recipes.LeaderInfo{ID: string(kv.Value), Token: kv.CreateRevision}, nil
			}
		}
		cancel()
		// Observe closes its channel on ctx's end or a broken watch.
		switch {
		case ctx.Err() != nil:
			return recipes.LeaderInfo{}, o.fail(ctx.Err())
		case recipe.Closed(o.s.Done()):
			return recipes.LeaderInfo{}, o.fail(backends.ErrSessionLost)
		}
		// Surface a lasting failure (closed client) instead of spinning.
		if _, err := el.Leader(ctx); err != nil && !errors.Is(err, concurrency.ErrElectionNoLeader) {
			return recipes.LeaderInfo{}, o.fail(err)
		}
	}
}

func (o *Observer) fail(err error) error {
	return fmt.Errorf("native: observe %s: %w", o.path, err)
}
