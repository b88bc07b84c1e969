package recipes

import (
	"context"
	"errors"
)

// ErrPermits: a semaphore was asked for with fewer than one permit.
var ErrPermits = errors.New("recipes: a semaphore needs at least one permit")

// Semaphore is a counting semaphore with a fixed number of permits, used
// by one client on one session: at most that many clients hold it at
// once, each holding one permit. Every client of one semaphore is given
// the same path and the same number of permits (a client told another
// number counts by its own). With one permit it is a Lock, and a
// Semaphore is one: it has a Lock's methods and their contract.
//
// Like Lock, it is not safe for concurrent use: one goroutine acquires and
// releases it.
type Semaphore interface {
	// Acquire blocks until this client holds a permit, ctx is done or the
	// session is lost. If ctx ends first, any node the attempt made is
	// removed on a fresh, bounded context before Acquire returns ctx's
	// error (or, if that fails, by the semaphore's next call). A lost
	// session returns an error matching ErrLockLost. Grant.Token grows
	// with every grant where the variant orders its grants (0: none);
	// Grant.Wakeups counts the notifications the wait consumed.
	Acquire(ctx context.Context) (Grant, error)
	// Release gives the permit back; ErrNotHeld if none is held, an error
	// matching ErrLockLost if the session ended meanwhile.
	Release(ctx context.Context) error
}

var _ Lock = Semaphore(nil)
