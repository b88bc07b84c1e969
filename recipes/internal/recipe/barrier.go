package recipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// Layout of one double barrier round at <path>, the same in recipes/naive
// and recipes/fair.
const (
	membersDir        = "members" // <path>/members/p_...: one ephemeral node per participant
	readyName         = "ready"   // <path>/ready: made by the participant that counts N
	participantPrefix = "p_"
)

// Round is one participant of a double barrier round, whatever its
// variant: the round's layout, the arrival (arm the ready watch, then
// create this participant's node), the ready node's creation and the
// round's cleanup, and the bookkeeping around Enter and Leave (errors
// prefixed with the family's name, the participant's node removed on
// failure, Leave refused before a successful Enter). How a participant
// waits for the others and how it leaves are its variant's steps, Gather
// and Depart, given to NewRound.
type Round struct {
	S       backends.Session
	Path    string
	Members string // <path>/members
	Ready   string // <path>/ready
	N       int
	Timeout time.Duration // bounds every cleanup's fresh context
	// Me is this participant's member node while it has one.
	Me      backends.Node
	pkg     string
	gather  Gather
	depart  Depart
	entered bool
}

var _ recipes.DoubleBarrier = (*Round)(nil)

// Gather waits until N participants arrived and returns the notifications
// it consumed. readyCtx is the context the ready watch was armed on
// (cancelled when Enter returns; a step that arms the watch again uses
// it), ready its events.
type Gather func(ctx, readyCtx context.Context, r *Round, ready <-chan backends.Event) (wakeups int, err error)

// Depart is a variant's way out of the round once Enter succeeded; it
// returns the notifications it consumed.
type Depart func(ctx context.Context, r *Round) (wakeups int, err error)

// NewRound returns one participant of family pkg's ("naive", "fair")
// round at path for n participants, which waits for the others with
// gather and leaves with depart. It makes no request.
// recipes.WithCleanupTimeout bounds every cleanup's fresh context.
func NewRound(pkg string, gather Gather, depart Depart, s backends.Session, path string, n int, opts ...recipes.Option) *Round {
	return &Round{S: s, Path: path, Members: path + "/" + membersDir, Ready: path + "/" + readyName,
		N: n, Timeout: recipes.NewOptions(opts...).CleanupTimeout, pkg: pkg, gather: gather, depart: depart}
}

// DoubleBarrierFactory adapts a family's NewDoubleBarrier to
// recipes.DoubleBarrierFactory.
func DoubleBarrierFactory[B recipes.DoubleBarrier](newBarrier func(s backends.Session, path string, n int, opts ...recipes.Option) B,
	opts ...recipes.Option) recipes.DoubleBarrierFactory {
	return func(s backends.Session, path string, n int) recipes.DoubleBarrier {
		return newBarrier(s, path, n, opts...)
	}
}

// Enter implements recipes.DoubleBarrier: it arms ExistsW on the ready
// node, creates this participant's ephemeral sequential node under the
// members and, unless the ready node existed already, runs the variant's
// gather. On error it removes this participant's node and returns an
// error matching recipes.ErrBarrierBroken where the session was lost.
func (r *Round) Enter(ctx context.Context) (recipes.Passage, error) {
	wakeups, err := r.arrive(ctx)
	if err != nil {
		if r.Me.Path != "" {
			_ = Remove(ctx, r.S, r.Me.Path, r.Timeout)
			r.Me = backends.Node{}
		}
		return recipes.Passage{Wakeups: wakeups}, r.fail("enter", err)
	}
	r.entered = true
	return recipes.Passage{Wakeups: wakeups}, nil
}

func (r *Round) arrive(ctx context.Context) (wakeups int, err error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, _, events, err := r.S.ExistsW(rctx, r.Ready)
	if err != nil {
		return 0, err
	}
	r.Me, err = CreateIn(ctx, r.S, r.Timeout, r.Members, func(c context.Context) (backends.Node, error) {
		return r.S.CreateSequential(c, r.Members, participantPrefix, nil)
	})
	if err != nil || ready {
		return 0, err
	}
	return r.gather(ctx, rctx, r, events)
}

// CreateReady creates the ready node, which lets every participant pass; an
// existing one is fine.
func (r *Round) CreateReady(ctx context.Context) error {
	_, err := r.S.Create(ctx, r.Ready, nil)
	if errors.Is(err, backends.ErrNodeExists) {
		err = nil
	}
	return err
}

// Leave implements recipes.DoubleBarrier: once Enter succeeded, it runs
// the variant's depart, then removes this participant's node if depart
// left it.
func (r *Round) Leave(ctx context.Context) (recipes.Passage, error) {
	if !r.entered {
		return recipes.Passage{}, fmt.Errorf("%s: leave barrier %s: %w", r.pkg, r.Path, recipes.ErrNotEntered)
	}
	r.entered = false
	wakeups, err := r.depart(ctx, r)
	if r.Me.Path != "" {
		_ = Remove(ctx, r.S, r.Me.Path, r.Timeout)
		r.Me = backends.Node{}
	}
	if err != nil {
		return recipes.Passage{Wakeups: wakeups}, r.fail("leave", err)
	}
	return recipes.Passage{Wakeups: wakeups}, nil
}

// DeleteMe deletes this participant's node (one already gone is fine).
func (r *Round) DeleteMe(ctx context.Context) error {
	if err := r.S.Delete(ctx, r.Me.Path); err != nil && !errors.Is(err, backends.ErrNoNode) {
		return err
	}
	r.Me = backends.Node{}
	return nil
}

// Cleanup removes what is left of the round once every participant left:
// the ready node, then the directories (best effort: on etcd they do not
// exist, and on ZooKeeper a straggler's node keeps them).
func (r *Round) Cleanup(ctx context.Context) {
	_ = Remove(ctx, r.S, r.Ready, r.Timeout)
	_ = Remove(ctx, r.S, r.Members, r.Timeout)
	_ = Remove(ctx, r.S, r.Path, r.Timeout)
}

func (r *Round) fail(op string, err error) error {
	return fmt.Errorf("%s: %s barrier %s: %w", r.pkg, op, r.Path, WrapLost(recipes.ErrBarrierBroken, err))
}
