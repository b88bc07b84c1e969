package native

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// etcdLock is concurrency.Mutex on the backend session's client and lease.
//
// Algorithm (the library's): a transaction puts <path>/<lease-hex> with the
// lease if absent and reads the oldest key under <path>/; if that is its own
// key it holds the lock, else it waits, with one watch, for the deletion of
// the newest key created before its own, and repeats until none is left.
//
// Herd behaviour: each waiter watches only its predecessor's key, so a
// release wakes one waiter (the recipe suite checks it with the servers'
// counts, the instrument seeing none of it). The key name is per lease, so
// one session can queue only once per path: two etcdLocks on one session are
// not exclusive.
//
// Token: the create revision of this client's key, read from the mutex's
// IsOwner comparison (no extra request).
type etcdLock struct {
	s       backends.Session
	cs      *concurrency.Session
	path    string
	key     string
	opt     recipes.Options
	holding *concurrency.Mutex
}

var _ Lock = (*etcdLock)(nil)

func newEtcdLock(s backends.Session, es EtcdSession, path string, o recipes.Options) (*etcdLock, error) {
	cs, err := concurrencySession(s, es, "lock "+path)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s/%x", path, es.Lease())
	return &etcdLock{s: s, cs: cs, path: path, key: key, opt: o}, nil
}

// concurrencySession is a concurrency.Session on the backend session's
// client and lease, for the native recipe what.
func concurrencySession(s backends.Session, es EtcdSession, what string) (*concurrency.Session, error) {
	client, lease := es.Client(), es.Lease()
	if client == nil || lease == clientv3.NoLease {
		return nil, fmt.Errorf("native: %s: etcd session has no client or lease: %w", what, ErrUnsupported)
	}
	// WithLease: reuse the backend's lease, grant none. The concurrency
	// session is never closed (Close would revoke the backend's lease). Its
	// keep-alive registration shares the client's one stream for the lease
	// and is withdrawn when the backend session ends, so it never keeps
	// alive a lease the backend has given up (or a fault injector let go).
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		select {
		case <-s.Done():
		case <-ctx.Done():
		}
	}()
	cs, err := concurrency.NewSession(client, concurrency.WithLease(lease), concurrency.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("native: %s: concurrency session: %w", what, err)
	}
	return cs, nil
}

func (l *etcdLock) ClientCountsVisible() bool { return false }

// Acquire runs Mutex.Lock under ctx, cancelled early if the session ends.
// On any failure other than a lost session it deletes this client's key on a
// fresh bounded context (Mutex.Lock leaves it if its first request fails
// mid-flight). A lost session returns an error matching recipes.ErrLockLost.
func (l *etcdLock) Acquire(ctx context.Context) (recipes.Grant, error) {
	if l.holding != nil {
		return recipes.Grant{}, fmt.Errorf("native: acquire %s: %w", l.path, ErrHeld)
	}
	if recipe.Ended(l.s) {
		return recipes.Grant{}, l.fail(recipe.LockLost(nil))
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-l.s.Done():
			cancel()
		case <-lctx.Done():
		}
	}()
	m := concurrency.NewMutex(l.cs, l.path)
	err := m.Lock(lctx)
	if err == nil && recipe.Ended(l.s) {
		err = recipe.LockLost(nil)
	}
	if err != nil {
		if recipe.Ended(l.s) || errors.Is(err, concurrency.ErrSessionExpired) {
			return recipes.Grant{}, l.fail(recipe.LockLost(err))
		}
		fctx, fcancel := recipe.Fresh(ctx, l.opt.CleanupTimeout)
		_, derr := l.cs.Client().Delete(fctx, l.key)
		fcancel()
		if derr != nil {
			err = fmt.Errorf("%w (removing %s: %v)", err, l.key, derr)
		}
		return recipes.Grant{}, l.fail(err)
	}
	owner := m.IsOwner()
	token := owner.GetCompare().GetCreateRevision()
	l.holding = m
	return recipes.Grant{Token: token, Lost: l.s.Done()}, nil
}

// Release runs Mutex.Unlock, retried once on a fresh bounded context if ctx
// ends first. Unlock deletes the key without checking it is still ours, so a
// lost session is detected from the session's Done channel.
func (l *etcdLock) Release(ctx context.Context) error {
	m := l.holding
	l.holding = nil
	return release(l.s, l.path, m != nil, func() error {
		err := m.Unlock(ctx)
		if err != nil {
			fctx, cancel := recipe.Fresh(ctx, l.opt.CleanupTimeout)
			if rerr := m.Unlock(fctx); rerr == nil {
				err = nil
			}
			cancel()
		}
		if err == nil && recipe.Ended(l.s) {
			err = recipe.LockLost(nil)
		}
		return err
	})
}

func (l *etcdLock) fail(err error) error { return acquireFailed(l.path, err) }
