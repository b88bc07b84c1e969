package recipes

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
)

// Errors of the barrier recipes, checked with errors.Is.
var (
	// ErrNotEntered: Leave on a double barrier this participant has not
	// entered (or whose Enter failed).
	ErrNotEntered = errors.New("recipes: barrier not entered")
	// ErrBarrierBroken: the participant's session ended inside the barrier;
	// errors wrapping it also wrap backends.ErrSessionLost.
	ErrBarrierBroken = errors.New("recipes: barrier broken")
)

// Barrier is the simple barrier of the ZooKeeper recipes: the barrier is up
// while its node exists. One client sets it, any number wait for it to go.
// Each waiter watches the one barrier node, so its removal wakes every
// waiter once; that is not a herd, because every waiter may then proceed.
// A Barrier is used by one goroutine.
type Barrier interface {
	// Set raises the barrier: an ephemeral node owned by this session, so
	// the barrier falls if the setter's session ends. An error wrapping
	// backends.ErrNodeExists if it is already up.
	Set(ctx context.Context) error
	// Remove lowers the barrier; nil if it is already down.
	Remove(ctx context.Context) error
	// Wait blocks until the barrier is down (at once if it is not up), ctx
	// is done (ctx's error; the watch is dropped) or the session is lost
	// (ErrBarrierBroken).
	Wait(ctx context.Context) error
}

// Passage describes one pass through a double barrier's Enter or Leave.
type Passage struct {
	// Wakeups counts the watch notifications the participant consumed in
	// this phase; a herd-free barrier needs about one.
	Wakeups int
}

// DoubleBarrier synchronises the start and the end of a computation among N
// participants: Enter returns once N have entered, Leave once all who
// entered have left. One DoubleBarrier is one participant in one round: the
// participants of a round share a path, and each round uses its own path so
// that rounds never see each other's nodes. It is used by one goroutine.
//
// Participants are ephemeral nodes, so one whose session ends stops
// counting: before the N-th arrival that stalls Enter for the others (until
// their ctx ends); after it, Leave simply no longer waits for it.
type DoubleBarrier interface {
	// Enter registers this participant and blocks until N participants have
	// entered, ctx is done or the session is lost (ErrBarrierBroken). If ctx
	// ends first, the participant's node is removed on a fresh, bounded
	// context before Enter returns ctx's error.
	Enter(ctx context.Context) (Passage, error)
	// Leave unregisters this participant and blocks until every participant
	// has called Leave (or lost its session). ErrNotEntered without a
	// successful Enter. If ctx ends first, the participant's node is removed
	// before Leave returns ctx's error: the others then no longer wait for it.
	// The last participant out removes the round's remaining nodes.
	Leave(ctx context.Context) (Passage, error)
}

// BarrierFactory makes the simple Barrier at path for one client.
type BarrierFactory func(s backends.Session, path string) Barrier

// DoubleBarrierFactory makes one participant of the double barrier round at
// path for n participants. Every participant of a round is given the same
// path and n.
type DoubleBarrierFactory func(s backends.Session, path string, n int) DoubleBarrier
