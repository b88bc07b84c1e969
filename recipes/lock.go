// Package recipes holds the contracts of zkbench's coordination recipes.
// Implementations are written once against backends.Session: recipes/naive
// (the herd-prone variants), recipes/fair (the herd-free ones) and
// recipes/native (the client libraries' own recipes, as baselines).
package recipes

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
)

// Errors shared by every recipe family, checked with errors.Is.
var (
	// ErrNotHeld: Release on a lock this client does not hold.
	ErrNotHeld = errors.New("recipes: lock not held")
	// ErrLockLost: the holder's session ended, so the lock is gone.
	ErrLockLost = errors.New("recipes: lock lost")
)

// Grant describes one successful acquisition.
type Grant struct {
	// Token is a fencing token that grows with every grant of this lock:
	// the lock node's create revision (ZooKeeper czxid, etcd create
	// revision), or, for queue locks on ZooKeeper, whose create cannot
	// return the czxid without a read, derived from the node's sequence
	// number (recipes/fair: sequence + 1). A sequence number is monotonic
	// per lock parent, which is all a fencing token for that lock needs
	// (tokens of different locks, or of one lock across a removal of its
	// parent, are not comparable). 0 means the variant has no token.
	Token int64
	// Wakeups counts the watch notifications this acquirer consumed while
	// waiting. An acquisition that waited needed one; the rest were wasted.
	Wakeups int
	// Lost is closed when the holder's session ends: the lock is no longer
	// held even if Release was not called.
	Lost <-chan struct{}
}

// Lock is a distributed mutual exclusion lock used by one client on one
// session. A Lock is not safe for concurrent use: one goroutine acquires and
// releases it.
type Lock interface {
	// Acquire blocks until the lock is held, ctx is done or the session is
	// lost. If ctx ends first, any node the attempt made is removed on a
	// fresh, bounded context before Acquire returns ctx's error; if that
	// removal fails (no quorum, say), the Lock's next Acquire or Release
	// removes it first.
	Acquire(ctx context.Context) (Grant, error)
	// Release gives the lock up; ErrNotHeld if not held.
	Release(ctx context.Context) error
}

// LockFactory makes the Lock named path for one client's session. Every
// client of one lock is given the same path.
type LockFactory func(s backends.Session, path string) Lock
