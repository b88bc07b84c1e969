package workloads

import (
	"context"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/recipes"
)

// lockSink takes one lock client's events in the order it makes them. event
// returns once the event is recorded — the loop's next step may rely on it:
// its release request goes out only after its exit is recorded — or with an
// error, which ends the loop (the parent is gone, or the events broke the
// protocol). Only the client's own loop calls it.
type lockSink interface {
	event(ev lockEvent) error
}

// lockClient is the one loop of a lock workload client, run in this process
// for most clients and in a worker process (RunLockWorker) for a client a
// fault pauses. It knows its lock, its session and its load model; what it
// does goes to a lockSink as events.
type lockClient struct {
	lock        recipes.Lock
	session     backends.Session
	hold, think time.Duration
	pace        *pacer // open loop: the shared schedule; nil: closed loop
	// now is the client's clock, the offset its events are stamped with.
	now func() time.Duration
	// work, if set, is what each critical section does (the ledger
	// workload) instead of the register writes and the hold.
	work *ledgerWork
}

// run repeats, until ctx ends or the session does after a failed call:
// (open loop: wait for the next scheduled slot) ask, acquire, write to the
// register with the grant's token, hold for hold, write again — before
// looking at whether the lock is still held, as a holder waking from a
// pause acts before it learns anything — (the ledger: its work instead of
// the writes and the hold) leave, release, (closed loop: think). A failed acquisition is followed by errorBackoff. Release runs on
// a fresh context bounded by releaseTimeout, so that a stopping case still
// lets its lock go. It returns the sink's error, if any.
func (c *lockClient) run(ctx context.Context, sink lockSink) error {
	for ctx.Err() == nil {
		intended := time.Duration(-1)
		if c.pace != nil {
			intended = c.pace.slot()
			if !sleepCtx(ctx, intended-c.now()) {
				return nil
			}
		}
		asked := c.now()
		if intended < 0 {
			intended = asked
		}
		if err := sink.event(lockEvent{Kind: evAsked, At: asked, Intended: intended}); err != nil {
			return err
		}
		g, err := c.lock.Acquire(ctx)
		done := c.now()
		if err != nil {
			if err := sink.event(lockEvent{Kind: evFailed, At: done, Err: err}); err != nil {
				return err
			}
			if ctx.Err() != nil || sessionEnded(c.session) || !sleepCtx(ctx, errorBackoff) {
				return nil
			}
			continue
		}
		if err := sink.event(lockEvent{Kind: evGranted, At: done, Token: g.Token, Wakeups: g.Wakeups, Notified: c.notified(done)}); err != nil {
			return err
		}
		if c.work != nil {
			if err := c.work.section(ctx, g.Token, sink); err != nil {
				return err
			}
		} else if err := c.section(ctx, g, sink); err != nil {
			return err
		}
		if err := sink.event(lockEvent{Kind: evExit, At: c.now()}); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		err = c.lock.Release(rctx)
		cancel()
		if err != nil {
			if err := sink.event(lockEvent{Kind: evReleaseFailed, At: c.now(), Err: err}); err != nil {
				return err
			}
			if sessionEnded(c.session) {
				return nil
			}
		} else if err := sink.event(lockEvent{Kind: evReleased, At: c.now()}); err != nil {
			return err
		}
		if c.pace == nil && c.think > 0 && !sleepCtx(ctx, c.think) {
			return nil
		}
	}
	return nil
}

// notified is when the client's last watch event arrived, on its clock at
// now (0: none, or the session is not instrumented).
func (c *lockClient) notified(now time.Duration) time.Duration {
	cs := instrument.CountersOf(c.session)
	if cs == nil {
		return 0
	}
	t := cs.LastWatchEvent()
	if t.IsZero() {
		return 0
	}
	return max(1, now-time.Since(t))
}

// section is the lock workload's critical section: a register write with
// the grant's token, the hold — ended early if the lock is lost — and
// another write. A variant without tokens cannot be fenced: it does not
// write.
func (c *lockClient) section(ctx context.Context, g recipes.Grant, sink lockSink) error {
	write := func() error {
		if g.Token == 0 {
			return nil
		}
		return sink.event(lockEvent{Kind: evWrite, At: c.now(), Token: g.Token})
	}
	if err := write(); err != nil {
		return err
	}
	if c.hold > 0 {
		t := time.NewTimer(c.hold)
		var lost bool
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-g.Lost:
			lost = true
		}
		t.Stop()
		if lost {
			if err := sink.event(lockEvent{Kind: evLost, At: c.now()}); err != nil {
				return err
			}
		}
	}
	return write()
}
