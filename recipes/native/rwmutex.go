package native

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	etcdrecipe "go.etcd.io/etcd/client/v3/experimental/recipes"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// RWLock is a native shared lock: a recipes.RWLock whose requests the
// instrument decorator does not see.
type RWLock interface {
	recipes.RWLock
	// ClientCountsVisible reports whether client-side counters see this
	// lock's requests: always false here.
	ClientCountsVisible() bool
}

// NewRWLock returns the library's own shared lock named path on s's
// underlying client: etcd's experimental recipes.RWMutex. go-zookeeper has
// no shared lock recipe: on ZooKeeper it returns an error matching
// recipes.ErrUnsupported, as on any other session.
func NewRWLock(s backends.Session, path string, opts ...recipes.Option) (RWLock, error) {
	o := recipes.NewOptions(opts...)
	inner := Underlying(s)
	switch u := inner.(type) {
	case EtcdSession:
		cs, err := concurrencySession(s, u, "shared lock "+path)
		if err != nil {
			return nil, err
		}
		return &etcdRWLock{s: s, cs: cs, path: path, lease: u.Lease(), opt: o}, nil
	case ZooKeeperSession:
		return nil, fmt.Errorf("native: shared lock %s: go-zookeeper has no shared lock recipe: %w", path, recipes.ErrUnsupported)
	}
	return nil, fmt.Errorf("native: shared lock %s on %T: %w", path, inner, ErrUnsupported)
}

// etcdRWLock is go.etcd.io/etcd/client/v3/experimental/recipes.RWMutex on
// the backend session's client and lease.
//
// Algorithm (the library's): RLock puts <path>/read/<unix-nanos> with the
// lease, then reads the newest key under <path>/write below its own
// revision and waits for its deletion, until there is none; Lock puts
// <path>/write/<unix-nanos> and does the same over every key under
// <path>/. It is the recipes page's shared lock with revisions for
// sequence numbers, and a bounded range (limit 1) in place of a listing.
//
// Herd behaviour: as recipes/fair's RWLock: a reader watches the writer
// before it, a writer the key before its own, so a writer's release wakes
// the readers it admits, and a reader's at most one writer. Its requests
// bypass the instrument: the servers' counts are its only witness.
//
// The library takes no context: RLock and Lock block until granted or the
// client closes. Acquire therefore runs them on a goroutine and, when ctx
// ends or the session does, returns at once, deletes this session's keys
// under <path>/ (one range, on a fresh bounded context) and leaves the
// goroutine to unlock whatever it is granted later; it ends at the latest
// when the session's client closes. Grants carry no fencing token (the
// library keeps its key's revision to itself).
type etcdRWLock struct {
	s       backends.Session
	cs      *concurrency.Session
	path    string
	lease   clientv3.LeaseID
	opt     recipes.Options
	holding *etcdrecipe.RWMutex
}

var _ RWLock = (*etcdRWLock)(nil)

func (l *etcdRWLock) ClientCountsVisible() bool { return false }

// Acquire runs RLock or Lock; see etcdRWLock for what cancelling does.
func (l *etcdRWLock) Acquire(ctx context.Context, mode recipes.Mode) (recipes.Grant, error) {
	if l.holding != nil {
		return recipes.Grant{}, fmt.Errorf("native: acquire %s: %w", l.path, ErrHeld)
	}
	if recipe.Ended(l.s) {
		return recipes.Grant{}, l.fail(recipe.LockLost(nil))
	}
	m := etcdrecipe.NewRWMutex(l.cs, l.path)
	done := make(chan error, 1)
	go func() {
		if mode == recipes.Read {
			done <- m.RLock()
		} else {
			done <- m.Lock()
		}
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	case <-l.s.Done():
		err = recipe.LockLost(nil)
	}
	if err == nil && recipe.Ended(l.s) {
		err = recipe.LockLost(nil)
	}
	if err == nil {
		l.holding = m
		return recipes.Grant{Lost: l.s.Done()}, nil
	}
	go func() {
		if <-done == nil {
			_ = m.Unlock() // granted after Acquire gave up: let it go
		}
	}()
	if recipe.IsLost(err) || errors.Is(err, concurrency.ErrSessionExpired) {
		return recipes.Grant{}, l.fail(recipe.LockLost(err))
	}
	if rerr := l.removeOwn(ctx); rerr != nil {
		err = fmt.Errorf("%w (removing this session's keys: %v)", err, rerr)
	}
	return recipes.Grant{}, l.fail(err)
}

// removeOwn deletes this session's keys under <path>/ on a fresh bounded
// context: the key of an abandoned RLock or Lock, which the library would
// leave queued while the session lives.
func (l *etcdRWLock) removeOwn(ctx context.Context) error {
	fctx, cancel := recipe.Fresh(ctx, l.opt.CleanupTimeout)
	defer cancel()
	cli := l.cs.Client()
	resp, err := cli.Get(fctx, l.path+"/", clientv3.WithPrefix()) // not WithKeysOnly: etcd 3.7 then leaves out the lease
	if err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		if clientv3.LeaseID(kv.Lease) != l.lease {
			continue
		}
		if _, err := cli.Delete(fctx, string(kv.Key)); err != nil {
			return err
		}
	}
	return nil
}

// Release runs RUnlock (which is Unlock: it deletes the key). The library
// takes no context: the delete runs on a goroutine, and if ctx ends first
// Release returns ctx's error while the delete goes on (it ends when the
// server answers or the client closes; the lease removes the key anyway).
// A lost session is detected from the session's Done channel.
func (l *etcdRWLock) Release(ctx context.Context) error {
	m := l.holding
	l.holding = nil
	return releaseCalled(ctx, l.s, l.path, m != nil, m.Unlock, func(error) bool { return recipe.Ended(l.s) })
}

func (l *etcdRWLock) fail(err error) error { return acquireFailed(l.path, err) }
