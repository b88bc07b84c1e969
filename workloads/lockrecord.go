package workloads

import (
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
	"github.com/zkbench/zkbench/workloads/measure"
)

// lockRecorder turns one lock client's events into the case's accounting:
// the shared checker, register and acquire histogram (a stripe of it), and
// the client's own series, operation counts and errors. It is the sink of an in-process
// client's loop, and the parent's for a worker process's (lockProc), so that
// both are counted by the same code. Only the client's loop (or its lockProc)
// calls it; nothing in it is shared except the window, the checker, the
// register and the acquire histogram.
//
// It follows the client through idle → asking → holding → releasing → idle
// and refuses an event that does not fit (errLockProtocol): each ask ends
// in one grant or failure, writes and lost come from a holder, the exit
// ends the critical section in the checker, and the released (or
// release-failed) event that follows it ends the release.
type lockRecorder struct {
	acquisitions
	checker *LockChecker
	fence   *safety.Register
	// waits: count measured grants whose acquirer had to wait (Wakeups),
	// to subtract from the client-side watch events. Off for a worker
	// process, whose watch events are not counted here.
	waits bool

	ticket int   // asking: the checker's ticket
	waited int64 // measured grants whose acquirer had to wait
	// sections, when set (a shard of a case), records each grant's
	// critical section for the check across shards; open is the index of
	// the one held now (-1: none).
	sections *results.Sections
	open     int
	// ledger, when set (the ledger workload), takes the grants and the
	// work's events; op and step are the holder's last step reported in
	// the critical section it is in ("", 0: none yet).
	ledger *ledgerHistory
	op     string
	step   int
	// exited is when the client left its critical section last (its
	// release call's start).
	exited time.Duration
}

// lockClientState is where a client is in its loop, as its events say.
type lockClientState uint8

const (
	stateIdle lockClientState = iota
	stateAsking
	stateHolding
	stateReleasing
)

var lockClientStateNames = [...]string{"idle", "asking", "holding", "releasing"}

func (s lockClientState) String() string { return lockClientStateNames[s] }

// errLostWhileHolding is counted as lock_lost when a holder's session ends.
var errLostWhileHolding = errors.New("session ended while holding the lock")

func newLockRecorder(id int, window *measure.Window, checker *LockChecker, fence *safety.Register, acquire *results.Stripes,
	interval time.Duration, waits bool) *lockRecorder {
	return &lockRecorder{
		acquisitions: newAcquisitions(id, window, acquire, interval),
		checker:      checker, fence: fence, waits: waits, open: -1,
	}
}

var _ lockSink = (*lockRecorder)(nil)

// lockEventFrom is the state each loop event comes from.
var lockEventFrom = map[lockEventKind]lockClientState{
	evAsked: stateIdle, evGranted: stateAsking, evFailed: stateAsking, evWrite: stateHolding,
	evLost: stateHolding, evExit: stateHolding, evReleased: stateReleasing, evReleaseFailed: stateReleasing,
	evStep: stateHolding, evCommit: stateHolding, evAbort: stateHolding,
}

// fitsLockEvent reports, wrapping errLockProtocol, an event that is not a client
// of noun's or does not follow state, the state of client id.
func fitsLockEvent(noun string, id int, state lockClientState, ev lockEvent) error {
	from, ok := lockEventFrom[ev.Kind]
	switch {
	case !ok:
		return fmt.Errorf("%w: client %d: %s is not a %s client's event", errLockProtocol, id, ev.Kind, noun)
	case state != from:
		return fmt.Errorf("%w: client %d: %s while %s", errLockProtocol, id, ev.Kind, state)
	}
	return nil
}

// event records ev, a loop event at ev.At on the case's clock: the
// client's account (follow), then the checker's, the fence's and the
// sections' part.
func (r *lockRecorder) event(ev lockEvent) error {
	work := ev.Kind == evStep || ev.Kind == evCommit || ev.Kind == evAbort
	if work && r.ledger == nil {
		return fmt.Errorf("%w: client %d: %s outside the ledger workload", errLockProtocol, r.id, ev.Kind)
	}
	if err := r.follow("lock", ev); err != nil {
		return err
	}
	if work {
		r.ledger.work(r.id, ev)
		if ev.Kind == evStep {
			r.op, r.step = ev.Op, ev.Step
		}
		return nil
	}
	switch ev.Kind {
	case evAsked:
		r.ticket = r.checker.Ask()
	case evGranted:
		r.checker.Grant(r.id, r.ticket, ev.Token, ev.At, ev.Notified, r.measured)
		if r.ledger != nil {
			r.ledger.grant(ev.At, r.id, ev.Token)
			r.op, r.step = "", 0
		}
		if r.sections != nil {
			r.open = r.sections.Add(r.id, ev.Token, ev.At)
		}
		if ev.Token != 0 {
			r.fence.Grant(ev.Token, r.id)
		}
		if r.measured && r.waits && ev.Wakeups > 0 {
			r.waited++
		}
	case evFailed:
		r.checker.Withdraw(r.ticket)
	case evWrite:
		// A worker's write arrives at the register now, when it is read.
		r.fence.Write(ev.Token, r.id)
	case evExit:
		r.checker.Release(r.id, ev.At)
		r.closeSection(ev.At)
		r.exited = ev.At
	case evReleased:
		if r.measured {
			r.checker.Released(ev.At - r.exited)
		}
	}
	return nil
}

// abandon ends, at at, what the client was doing when it stopped acting
// without saying so (its worker process died or was killed): a wait is
// withdrawn and settled as failed with err; a critical section ends. A
// release in flight was past the critical section already.
func (r *lockRecorder) abandon(at time.Duration, err error) {
	switch r.state {
	case stateAsking:
		r.checker.Withdraw(r.ticket)
		r.settle(r.intended, at, err)
	case stateHolding:
		r.checker.Release(r.id, at)
		r.closeSection(at)
	}
	r.state = stateIdle
}

// closeSection ends the critical section held now, if sections are kept.
func (r *lockRecorder) closeSection(at time.Duration) {
	if r.sections != nil && r.open >= 0 {
		r.sections.Exit[r.open] = at
		r.open = -1
	}
}
