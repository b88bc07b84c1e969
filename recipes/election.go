package recipes

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
)

// Errors of the election recipes, checked with errors.Is.
var (
	// ErrLeadershipLost: the candidate's session ended (or its candidate
	// node vanished), so it no longer leads or queues. Errors that wrap it
	// because the session ended also wrap backends.ErrSessionLost.
	ErrLeadershipLost = errors.New("recipes: leadership lost")
	// ErrClosed: Await on a Latch that was closed.
	ErrClosed = errors.New("recipes: closed")
	// ErrNoLeader: Observer.Leader found no leader.
	ErrNoLeader = errors.New("recipes: no leader")
	// ErrUnsupported: the recipe family has no implementation on this
	// backend (the native election on ZooKeeper, whose Go client has none).
	ErrUnsupported = errors.New("recipes: not supported on this backend")
)

// Leadership describes one term of leadership.
type Leadership struct {
	// Token fences the term: the create revision of the node that made this
	// candidate leader (ZooKeeper czxid, etcd create revision). It grows with
	// every term of one election. Observers report the same number.
	Token int64
	// Wakeups counts the watch notifications this candidate consumed while
	// waiting for the term. A herd-free candidate needs at most one per
	// predecessor that left; the rest were wasted.
	Wakeups int
	// Lost is closed when the term ends: the candidate's session ended, or
	// the Latch was closed. A leader must stop acting when it closes. It
	// closes only after the server may already have elected someone else:
	// the ephemeral-node pitfall (a paused leader learns late) is inherent.
	Lost <-chan struct{}
}

// Latch is leader election in the style of Curator's LeaderLatch: a
// candidate volunteers once and stays leader until it closes the latch or its
// session ends. A Latch belongs to one candidate (one session) and is used by
// one goroutine: to stop a waiting Await, cancel its ctx.
type Latch interface {
	// Await volunteers (on the first call, or again after a cancelled one)
	// and blocks until this candidate leads, ctx is done or the session is
	// lost (ErrLeadershipLost). If it already leads it returns the current
	// term at once. If ctx ends first, the candidacy is withdrawn: any node
	// the attempt made is removed on a fresh, bounded context before Await
	// returns ctx's error.
	Await(ctx context.Context) (Leadership, error)
	// Close withdraws the candidacy and gives leadership up: it closes the
	// term's Lost channel first, then removes the candidate's node on a
	// fresh context bounded by the cleanup timeout (ctx supplies values
	// only), so the node never outlives Close while the session is alive.
	// Idempotent; later Awaits return ErrClosed. It does not close the
	// session.
	Close(ctx context.Context) error
}

// Selector is leader election in the style of Curator's LeaderSelector with
// autoRequeue: leadership is held for as long as the callback runs, given up
// when it returns, and the candidate then queues again, so that candidates
// of a herd-free election take their terms round-robin.
type Selector interface {
	// Run queues for leadership and calls takeLeadership each time this
	// candidate is elected, with a context that is cancelled when the term
	// is lost (session ended) or Run's ctx is done; takeLeadership should
	// return promptly then. When takeLeadership returns nil, leadership is
	// given up and the candidate requeues. Run returns takeLeadership's
	// error (after giving leadership up), ErrLeadershipLost when the session
	// ends, or ctx's error when ctx is done; it removes its node before
	// returning in every case.
	Run(ctx context.Context, takeLeadership func(ctx context.Context) error) error
}

// LeaderInfo identifies a leader as observers see it.
type LeaderInfo struct {
	// ID is the id the leader volunteered with.
	ID string `json:"id"`
	// Token equals the leader's Leadership.Token.
	Token int64 `json:"token"`
}

// Observer watches who leads an election without taking part. One Observer
// belongs to one client (session) and one goroutine. Every observer must
// learn of every change, so each leader change notifies every observer at
// least once; the implementations differ in how many more notifications and
// requests it costs (see their docs).
type Observer interface {
	// Leader returns the current leader, or ErrNoLeader. It arms no watch.
	Leader(ctx context.Context) (LeaderInfo, error)
	// Next blocks until a leader other than after (compared by Token) holds
	// the election and returns it; with a zero after it returns the current
	// leader, waiting for one if there is none. It returns ctx's error when
	// ctx is done and an error wrapping backends.ErrSessionLost when the
	// observer's session ends; it leaves no watch armed on return (on
	// ZooKeeper an unfired watch lingers on the server until it fires or the
	// session ends).
	Next(ctx context.Context, after LeaderInfo) (LeaderInfo, error)
}

// LatchFactory makes a Latch for the candidate id (unique among the
// candidates, stored in its node for observers) of the election at path.
type LatchFactory func(s backends.Session, path, id string) Latch

// SelectorFactory makes a Selector for the candidate id of the election at
// path.
type SelectorFactory func(s backends.Session, path, id string) Selector

// ObserverFactory makes an Observer of the election at path.
type ObserverFactory func(s backends.Session, path string) Observer

// Election groups one family's election recipes. All three of one family
// interoperate on one path: observers see the latches' and selectors'
// leaders. Families do not interoperate with each other.
type Election struct {
	Latch    LatchFactory
	Selector SelectorFactory
	Observer ObserverFactory
}
