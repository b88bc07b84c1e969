// Package native wraps the client libraries' own recipes as baselines. Its
// locks are go.etcd.io/etcd/client/v3/concurrency.Mutex on etcd and
// go-zookeeper's zk.Lock on ZooKeeper. Both queue on sequential nodes (etcd: create
// revisions) and watch only their predecessor, so both are herd-free; they
// are here to show what the libraries cost next to recipes/fair, not as
// models. Notably zk.Lock has no context and leaves its node behind on error;
// the wrapper makes Acquire return on ctx's end and cleans up after it.
//
// The native locks run on the backend session's own client (etcd client and
// lease, or zk.Conn), found by unwrapping decorators such as
// backends/instrument. Their requests therefore bypass the decorator: no
// client-side request, watch or wake-up counts exist for them (Grant.Wakeups
// is always 0) and every Lock from this package reports
// ClientCountsVisible() == false. Server-side counts are unaffected.
package native

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Errors of this package, checked with errors.Is.
var (
	// ErrUnsupported: the session is neither an etcd nor a ZooKeeper
	// backend session (after unwrapping decorators). It also matches
	// recipes.ErrUnsupported.
	ErrUnsupported = fmt.Errorf("native: session exposes no etcd client or zk.Conn: %w", recipes.ErrUnsupported)
	// ErrHeld: Acquire on a lock this client already holds.
	ErrHeld = errors.New("native: lock already held by this client")
)

// Lock is a native lock: a recipes.Lock whose requests the instrument
// decorator does not see.
type Lock interface {
	recipes.Lock
	// ClientCountsVisible reports whether client-side counters (instrument)
	// see this lock's requests: always false here.
	ClientCountsVisible() bool
}

// EtcdSession is what the etcd backend session exposes for native recipes.
type EtcdSession interface {
	Client() *clientv3.Client
	Lease() clientv3.LeaseID
}

// ZooKeeperSession is what the ZooKeeper backend session exposes for native
// recipes.
type ZooKeeperSession interface {
	Conn() *zk.Conn
}

// unwrapper is implemented by session decorators (backends/instrument).
type unwrapper interface{ Unwrap() backends.Session }

// NewLock returns the library's own lock named path on s's underlying client.
// It unwraps decorators (any Unwrap() backends.Session method) to reach the
// backend session, and returns an error matching ErrUnsupported if that is
// neither an etcd nor a ZooKeeper session. On etcd it registers a keep-alive
// listener on the session's existing lease (no request, no new lease); it
// never revokes that lease. On ZooKeeper it makes no request.
// recipes.WithCleanupTimeout bounds the fresh context on which a cancelled
// Acquire removes the node the library left (default 5s).
func NewLock(s backends.Session, path string, opts ...recipes.Option) (Lock, error) {
	o := recipes.NewOptions(opts...)
	inner := Underlying(s)
	switch u := inner.(type) {
	case EtcdSession:
		return newEtcdLock(s, u, path, o)
	case ZooKeeperSession:
		return newZooKeeperLock(s, u, path, o), nil
	}
	return nil, fmt.Errorf("native: lock %s on %T: %w", path, inner, ErrUnsupported)
}

// Underlying strips every decorator from s.
func Underlying(s backends.Session) backends.Session {
	for {
		u, ok := s.(unwrapper)
		if !ok {
			return s
		}
		next := u.Unwrap()
		if next == nil || next == s {
			return s
		}
		s = next
	}
}

// release is the Release of every native lock: recipes.ErrNotHeld unless
// held, an error matching recipes.ErrLockLost without a request if the
// session ended, else unlock's error; each wrapped with the lock's path.
func release(s backends.Session, path string, held bool, unlock func() error) error {
	var err error
	switch {
	case !held:
		err = recipes.ErrNotHeld
	case recipe.Ended(s):
		err = recipe.LockLost(nil)
	default:
		err = unlock()
	}
	if err != nil {
		return fmt.Errorf("native: release %s: %w", path, err)
	}
	return nil
}

// releaseCalled is release for a library lock whose unlock takes no
// context: unlock runs under call, so Release returns on ctx's end while
// the delete goes on, and an error that lost says the session's end caused
// matches recipes.ErrLockLost.
func releaseCalled(ctx context.Context, s backends.Session, path string, held bool, unlock func() error, lost func(error) bool) error {
	return release(s, path, held, func() error {
		err := call(ctx, unlock)
		if err != nil && lost(err) {
			err = recipe.LockLost(err)
		}
		return err
	})
}

// acquireFailed wraps an Acquire error of the native lock at path.
func acquireFailed(path string, err error) error {
	return fmt.Errorf("native: acquire %s: %w", path, err)
}
