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

// Round is what every double barrier participant shares: the round's
// layout, the arrival (arm the ready watch, then create this participant's
// node), the ready node's creation and the round's cleanup, and the
// bookkeeping around Enter and Leave (errors prefixed with the family's
// name, the participant's node removed on failure, Leave refused before a
// successful Enter). How a participant waits for the others is its
// variant's: Enter and Leave take it as a step.
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
	entered bool
}

// NewRound returns one participant of the round at path for n participants
// of family pkg ("naive", "fair"). It makes no request.
func NewRound(pkg string, s backends.Session, path string, n int, timeout time.Duration) Round {
	return Round{S: s, Path: path, Members: path + "/" + membersDir, Ready: path + "/" + readyName,
		N: n, Timeout: timeout, pkg: pkg}
}

// DoubleBarrierFactory adapts a family's NewDoubleBarrier to
// recipes.DoubleBarrierFactory.
func DoubleBarrierFactory[B recipes.DoubleBarrier](newBarrier func(s backends.Session, path string, n int, opts ...recipes.Option) B,
	opts ...recipes.Option) recipes.DoubleBarrierFactory {
	return func(s backends.Session, path string, n int) recipes.DoubleBarrier {
		return newBarrier(s, path, n, opts...)
	}
}

// Gather waits until N participants arrived. readyCtx is the context the
// ready watch was armed on (cancelled when Enter returns; a step that arms
// the watch again uses it), ready its events.
type Gather func(ctx, readyCtx context.Context, ready <-chan backends.Event) (recipes.Passage, error)

// Enter arms ExistsW on the ready node, creates this participant's
// ephemeral sequential node under the members and, unless the ready node
// existed already, runs gather. On error it removes this participant's node
// and returns an error matching recipes.ErrBarrierBroken where the session
// was lost.
func (r *Round) Enter(ctx context.Context, gather Gather) (recipes.Passage, error) {
	p, err := r.arrive(ctx, gather)
	if err != nil {
		if r.Me.Path != "" {
			_ = Remove(ctx, r.S, r.Me.Path, r.Timeout)
			r.Me = backends.Node{}
		}
		return p, r.fail("enter", err)
	}
	r.entered = true
	return p, nil
}

func (r *Round) arrive(ctx context.Context, gather Gather) (recipes.Passage, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, _, events, err := r.S.ExistsW(rctx, r.Ready)
	if err != nil {
		return recipes.Passage{}, err
	}
	r.Me, err = CreateIn(ctx, r.S, r.Timeout, r.Members, func(c context.Context) (backends.Node, error) {
		return r.S.CreateSequential(c, r.Members, participantPrefix, nil)
	})
	if err != nil || ready {
		return recipes.Passage{}, err
	}
	return gather(ctx, rctx, events)
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

// Leave runs depart, the variant's way out, once Enter succeeded, then
// removes this participant's node if depart left it.
func (r *Round) Leave(ctx context.Context, depart func(context.Context) (recipes.Passage, error)) (recipes.Passage, error) {
	if !r.entered {
		return recipes.Passage{}, fmt.Errorf("%s: leave barrier %s: %w", r.pkg, r.Path, recipes.ErrNotEntered)
	}
	r.entered = false
	p, err := depart(ctx)
	if r.Me.Path != "" {
		_ = Remove(ctx, r.S, r.Me.Path, r.Timeout)
		r.Me = backends.Node{}
	}
	if err != nil {
		return p, r.fail("leave", err)
	}
	return p, nil
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
