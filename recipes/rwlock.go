package recipes

import (
	"context"
	"fmt"
)

// Mode is how a shared lock is asked for: to read (shared with other
// readers) or to write (alone).
type Mode int

// Modes of a shared lock.
const (
	Read Mode = iota + 1
	Write
)

func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// RWLock is a shared (read/write) lock used by one client on one session:
// any number of readers hold it at once, a writer holds it alone. Like
// Lock, it is not safe for concurrent use: one goroutine acquires and
// releases it, in one mode at a time.
type RWLock interface {
	// Acquire blocks until the lock is held in mode, ctx is done or the
	// session is lost; cancelling does what it does for Lock.Acquire (the
	// attempt's node is removed on a fresh, bounded context, or by the
	// next call if that fails). Grant.Wakeups counts the notifications the
	// wait consumed: the last one of a wait that needed one let it in (a
	// writer's release that admits a batch of readers wakes each of them
	// with one such), the rest were wasted.
	Acquire(ctx context.Context, mode Mode) (Grant, error)
	// Release gives the lock up, whichever mode it is held in; ErrNotHeld
	// if not held.
	Release(ctx context.Context) error
}
