// Package recipe holds the steps zkbench's recipes in recipes/naive,
// recipes/fair and recipes/native share: waiting on one-shot watches and
// other channels while minding the session and the caller's context
// (recipe.go), cleaning up and creating on a fresh bounded context, a group
// member's node among them (recipe.go, create.go), turning a lost session
// into each recipe's own error (lost.go), the tokens a grant or a term
// carries (token.go), and, by family, the skeleton each variant
// parameterises with its own algorithm step: the lock queue, its two ways
// of waiting and its leftover nodes (queue.go, waits.go, leftovers.go,
// parent.go), an election's latch, which campaigns with its variant's
// Candidate, its term and the selector loop built on latches (election.go,
// term.go), a double barrier's participant, which gathers and departs with
// its variant's steps (barrier.go), the take-by-delete queue consumer
// (items.go) and the two-phase commit's nodes (twophase.go). Nothing here
// knows which backend it runs on.
package recipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// Fresh returns a context that carries ctx's values but not its cancellation
// or deadline, bounded by timeout instead. Cleanup runs on it so that it still
// happens after the caller gave up.
func Fresh(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// Outlive returns a context that carries ctx's values and ends timeout
// after ctx does (with context.DeadlineExceeded), not with it: a create
// runs on it, so that a caller who gives up mid-request still learns
// which node was made, while a create that merely waits its turn on a
// loaded server (ten thousand clients queueing at once) is not cut short
// as long as its caller waits. A ctx that is done already, or can never
// be, gives Fresh's timeout from now.
func Outlive(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if ctx.Err() != nil || ctx.Done() == nil {
		return Fresh(ctx, timeout)
	}
	fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	// Once ctx ends, a timer ends fctx; fctx ending any other way (cancel)
	// stops the timer.
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(timeout, func() { cancel(context.DeadlineExceeded) })
		context.AfterFunc(fctx, func() { t.Stop() })
	})
	return causeContext{fctx}, func() {
		stop()
		cancel(context.Canceled)
	}
}

// causeContext reports its cancellation cause as Err, so that Outlive's
// context ends with context.DeadlineExceeded like Fresh's.
type causeContext struct{ context.Context }

func (c causeContext) Err() error {
	if c.Context.Err() == nil {
		return nil
	}
	return context.Cause(c.Context)
}

// Ended reports whether the session's Done channel is closed.
func Ended(s backends.Session) bool { return Closed(s.Done()) }

// Closed reports whether ch is closed (or has a value ready).
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Await blocks until the one-shot watch events delivers, the session ends or
// ctx is done. It returns woke=true for a watch notification (one wake-up
// consumed), a LockLost error when the session ends (or the watch reports
// EventSessionLost), and ctx's error when ctx is done. A channel closed
// without an event while ctx is alive returns (false, nil): the caller
// re-checks its state, which is always safe in these recipes.
func Await(ctx context.Context, s backends.Session, events <-chan backends.Event) (woke bool, err error) {
	w, err := Wait(ctx, s, events, nil)
	if errors.Is(err, backends.ErrSessionLost) {
		return false, LockLost(nil)
	}
	return w == First, err
}

// WaitGone arms ExistsW on path and returns once a notification arrives
// (woke) or path turns out to be gone already (not woke). Errors are
// Wait's.
func WaitGone(ctx context.Context, s backends.Session, path string) (woke bool, err error) {
	return watchGone(ctx, s, path, func(events <-chan backends.Event) (bool, error) {
		w, err := Wait(ctx, s, events, nil)
		return w == First, err
	})
}

// AwaitGone is WaitGone with Await's errors: the lock recipes' wait on the
// node before theirs.
func AwaitGone(ctx context.Context, s backends.Session, path string) (woke bool, err error) {
	return watchGone(ctx, s, path, func(events <-chan backends.Event) (bool, error) {
		return Await(ctx, s, events)
	})
}

func watchGone(ctx context.Context, s backends.Session, path string, await func(<-chan backends.Event) (bool, error)) (bool, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, _, events, err := s.ExistsW(wctx, path)
	if err != nil || !exists {
		return false, err
	}
	return await(events)
}

// AwaitEvent is Await that also returns the notification's type (zero
// unless woke).
func AwaitEvent(ctx context.Context, s backends.Session, events <-chan backends.Event) (backends.EventType, bool, error) {
	w, ev, err := wait(ctx, s, events, nil)
	if errors.Is(err, backends.ErrSessionLost) {
		return 0, false, LockLost(nil)
	}
	if w != First {
		return 0, false, err
	}
	return ev.Type, true, err
}

// Receive blocks until ch delivers (ok is false if ch was closed), ctx is
// done (ctx's error) or the session ends (backends.ErrSessionLost): the
// wait of a recipe on a channel of its own, a library's watch or a timer,
// rather than a Session's one-shot watch (Wait).
func Receive[T any](ctx context.Context, s backends.Session, ch <-chan T) (v T, ok bool, err error) {
	select {
	case v, ok = <-ch:
		return v, ok, nil
	case <-ctx.Done():
		return v, false, ctx.Err()
	case <-s.Done():
		return v, false, backends.ErrSessionLost
	}
}

// Woke says how a Wait ended without error.
type Woke int

// Wait outcomes.
const (
	// Recheck: a watch channel closed without an event while ctx was alive
	// (the backend dropped the watch). Nothing was consumed; the caller
	// re-reads its state, which is always safe in these recipes.
	Recheck Woke = iota
	// First: the first channel delivered a notification.
	First
	// Second: the second channel delivered a notification.
	Second
)

// Wait blocks until the one-shot watch first (or second, which may be nil)
// delivers a notification, the session ends (backends.ErrSessionLost, also
// when a watch reports EventSessionLost) or ctx is done (ctx's error). A
// notification is one wake-up consumed. Callers map ErrSessionLost to their
// recipe's error (Await to LockLost; WrapLost to an election's or barrier's).
func Wait(ctx context.Context, s backends.Session, first, second <-chan backends.Event) (Woke, error) {
	w, _, err := wait(ctx, s, first, second)
	return w, err
}

// wait is Wait that also returns the notification.
func wait(ctx context.Context, s backends.Session, first, second <-chan backends.Event) (Woke, backends.Event, error) {
	var (
		ev backends.Event
		ok bool
		w  Woke
	)
	select {
	case ev, ok = <-first:
		w = First
	case ev, ok = <-second:
		w = Second
	case <-s.Done():
		return Recheck, ev, backends.ErrSessionLost
	case <-ctx.Done():
		return Recheck, ev, ctx.Err()
	}
	switch {
	case ok && ev.Type == backends.EventSessionLost:
		return Recheck, ev, backends.ErrSessionLost
	case ok:
		return w, ev, nil
	case ctx.Err() != nil:
		return Recheck, ev, ctx.Err()
	case Closed(s.Done()):
		return Recheck, ev, backends.ErrSessionLost
	}
	return Recheck, ev, nil
}

// Remove deletes path on a fresh context bounded by timeout. A node already
// gone counts as removed; so does a lost session, whose ephemeral nodes the
// server removes itself.
func Remove(ctx context.Context, s backends.Session, path string, timeout time.Duration) error {
	fctx, cancel := Fresh(ctx, timeout)
	defer cancel()
	err := s.Delete(fctx, path)
	if err == nil || errors.Is(err, backends.ErrNoNode) || errors.Is(err, backends.ErrSessionLost) {
		return nil
	}
	return err
}

// IndexOf returns the position of the node named name in children, or -1.
func IndexOf(children []backends.Node, name string) int {
	for i, c := range children {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Release deletes the node a lock is held by. It returns a LockLost error if the
// session has ended or the node is already gone (the server removed it with
// the session). If the delete fails for any other reason, ctx's end included,
// it is retried once on a fresh context bounded by timeout, so the node never
// outlives Release; only if that also fails is the error returned.
func Release(ctx context.Context, s backends.Session, path string, timeout time.Duration) error {
	return ReleaseWith(ctx, s, timeout, func(ctx context.Context) error { return s.Delete(ctx, path) })
}

// ReleaseWith is Release with del as the delete (a tagged queue's
// Session.Dequeue): once on ctx and, if that fails otherwise than by the
// node or the session being gone, once more on a fresh context bounded by
// timeout.
func ReleaseWith(ctx context.Context, s backends.Session, timeout time.Duration, del func(context.Context) error) error {
	if Ended(s) {
		return LockLost(nil)
	}
	err := del(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backends.ErrNoNode) || IsLost(err):
		return LockLost(err)
	}
	fctx, cancel := Fresh(ctx, timeout)
	defer cancel()
	rerr := del(fctx)
	if rerr == nil || errors.Is(rerr, backends.ErrNoNode) || errors.Is(rerr, backends.ErrSessionLost) {
		return nil
	}
	return fmt.Errorf("%w (retry: %v)", err, rerr)
}
