package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/recipes"
)

// What a lock client does, as events (lockEvent), in the order it does it:
// the one lock client loop (lockClient.run) reports them to a lockSink. In
// this process the sink is the client's lockRecorder; in a worker process
// (RunLockWorker) it is a lockEventWriter that sends them to the parent as
// JSON lines, where lockProc decodes them and hands them to the same
// recorder.
//
// Protocol between the parent and a worker, one JSON object a line:
//
//	parent → worker: a LockWorkerSpec; then lockCommands: {"cmd":"start"},
//	                 and {"cmd":"ack","seq":N} for each event that asks for
//	                 one; EOF to stop
//	worker → parent: lockWire: an event with its sequence number (1, 2, ...
//	                 with no gap), the worker's counts so far (report) and,
//	                 on exit and step, "ack": true
//
// The worker's first event is session (or error); the loop's events follow
// start. A step of the ledger's work is acknowledged too, so that a
// kill-holder fault can kill the worker between two steps (instead of the
// ack). An exit event is acknowledged: the worker sends its release request
// only once the parent has ended the critical section in its checker, as
// the in-process loop ends it before it releases, so that no grant the
// release lets through is ever recorded before the exit. An event kind or a
// command that is not one of these is an error, never skipped.

// lockEventKind is what a lock client did.
type lockEventKind uint8

const (
	// The loop's events, recorded by lockRecorder.
	evAsked         lockEventKind = iota + 1 // about to call Acquire
	evGranted                                // Acquire returned the lock: Token, Wakeups
	evFailed                                 // Acquire failed: Err
	evWrite                                  // a write to the shared register with Token
	evLost                                   // the session ended while holding the lock
	evExit                                   // left the critical section, about to Release
	evReleased                               // Release succeeded
	evReleaseFailed                          // Release failed: Err

	// A worker process's own events, handled by lockProc.
	evSession     // the session is open: Session (before start)
	evSessionLost // the session ended; the worker exits
	evError       // the worker cannot go on: Err

	// The ledger's work inside a critical section (ledgerwork.go), recorded
	// by lockRecorder into the case's ledgerHistory.
	evStep   // a step of operation Op: Step, Token, Outcome
	evCommit // operation Op committed: Token, Recovered, Reqs, Bytes
	evAbort  // the work stopped before its commit: Op, Token, Err, Reqs, Bytes
)

var lockEventNames = [...]string{
	evAsked: "asked", evGranted: "granted", evFailed: "failed", evWrite: "write", evLost: "lost",
	evExit: "exit", evReleased: "released", evReleaseFailed: "release-failed",
	evSession: "session", evSessionLost: "session-lost", evError: "error",
	evStep: "step", evCommit: "commit", evAbort: "abort",
}

// errLockProtocol: a message between a worker and its parent that breaks
// the protocol (unreadable, unknown kind, out of order).
var errLockProtocol = errors.New("workloads: lock worker protocol")

func (k lockEventKind) String() string {
	if int(k) < len(lockEventNames) && lockEventNames[k] != "" {
		return lockEventNames[k]
	}
	return fmt.Sprintf("lockEventKind(%d)", uint8(k))
}

// MarshalText refuses a kind that has no name.
func (k lockEventKind) MarshalText() ([]byte, error) {
	if int(k) >= len(lockEventNames) || lockEventNames[k] == "" {
		return nil, fmt.Errorf("%w: no event kind %d", errLockProtocol, uint8(k))
	}
	return []byte(lockEventNames[k]), nil
}

// UnmarshalText refuses a name that is not a kind.
func (k *lockEventKind) UnmarshalText(b []byte) error {
	for i, n := range lockEventNames {
		if n != "" && n == string(b) {
			*k = lockEventKind(i)
			return nil
		}
	}
	return fmt.Errorf("%w: unknown event kind %q", errLockProtocol, b)
}

// lockEvent is one thing a lock client did, at At on its clock (an offset
// from the start of its loop; the parent moves a worker's onto the case's).
type lockEvent struct {
	Kind lockEventKind
	At   time.Duration
	// Intended (asked) is when the acquisition was scheduled: the open
	// loop's slot, or At.
	Intended time.Duration
	Token    int64 // granted, write
	Wakeups  int   // granted
	// Notified (granted) is when the grantee's last watch event before the
	// grant arrived, on the case's clock: the notification that let it
	// decide. Not positive: none, or its session is not instrumented.
	Notified time.Duration
	Session  int64 // session
	// The ledger's work (step, commit, abort): the operation, the step
	// (1..K; K+1 is the commit), what became of the step, whether the
	// commit finished another holder's operation, and the store requests
	// and payload bytes spent since the last commit or abort.
	Op          string
	Step        int
	Outcome     string
	Recovered   bool
	Reqs, Bytes int64
	// Err (failed, release-failed, error): across the pipe it arrives as a
	// workerError of the same kind (errorKind) and text.
	Err error
	// Report is a worker's counts when it sent the event (on the pipe
	// only; lockProc passes it to the case's client counts).
	Report *workerReport
}

// workerReport is what a worker process has counted so far: its session's
// requests and watch events (backends/instrument) and its backend's
// witness of the server work they caused. Sent with every event, so the
// parent's client counts lag the worker's by at most what it did since its
// last event.
type workerReport struct {
	Counts  instrument.Counts `json:"counts"`
	Witness backends.Witness  `json:"witness"`
}

// lockWire is a lockEvent on the pipe.
type lockWire struct {
	Seq       uint64        `json:"seq"`
	Kind      lockEventKind `json:"kind"`
	At        time.Duration `json:"at_ns,omitempty"`
	Intended  time.Duration `json:"intended_ns,omitempty"`
	Token     int64         `json:"token,omitempty"`
	Wakeups   int           `json:"wakeups,omitempty"`
	Notified  time.Duration `json:"notified_ns,omitempty"`
	Session   int64         `json:"session,omitempty"`
	Op        string        `json:"op,omitempty"`
	Step      int           `json:"step,omitempty"`
	Outcome   string        `json:"outcome,omitempty"`
	Recovered bool          `json:"recovered,omitempty"`
	Reqs      int64         `json:"reqs,omitempty"`
	Bytes     int64         `json:"bytes,omitempty"`
	ErrKind   string        `json:"err_kind,omitempty"`
	Err       string        `json:"err,omitempty"`
	Report    *workerReport `json:"report,omitempty"`
	// Ack: the worker waits for the parent's ack of Seq before it goes
	// on, unless the parent has closed its stdin (it is stopping it).
	Ack bool `json:"ack,omitempty"`
}

// encodeEvent is ev as the seq-th line of a worker, without its newline.
func encodeEvent(seq uint64, ev lockEvent, ack bool) ([]byte, error) {
	w := lockWire{Seq: seq, Kind: ev.Kind, At: ev.At, Intended: ev.Intended, Token: ev.Token,
		Wakeups: ev.Wakeups, Notified: ev.Notified, Session: ev.Session, Op: ev.Op, Step: ev.Step, Outcome: ev.Outcome, Recovered: ev.Recovered,
		Reqs: ev.Reqs, Bytes: ev.Bytes, Report: ev.Report, Ack: ack}
	if ev.Err != nil {
		w.ErrKind, w.Err = errorKind(ev.Err), ev.Err.Error()
	}
	return json.Marshal(w)
}

// decodeEvent reads one line of a worker.
func decodeEvent(line []byte) (ev lockEvent, seq uint64, ack bool, err error) {
	var w lockWire
	if err := json.Unmarshal(line, &w); err != nil {
		if errors.Is(err, errLockProtocol) {
			return lockEvent{}, 0, false, err
		}
		return lockEvent{}, 0, false, fmt.Errorf("%w: unreadable event %q: %w", errLockProtocol, line, err)
	}
	if w.Seq == 0 || w.Kind == 0 {
		return lockEvent{}, 0, false, fmt.Errorf("%w: event %q without a sequence number or kind", errLockProtocol, line)
	}
	ev = lockEvent{Kind: w.Kind, At: w.At, Intended: w.Intended, Token: w.Token, Wakeups: w.Wakeups, Notified: w.Notified, Session: w.Session,
		Op: w.Op, Step: w.Step, Outcome: w.Outcome, Recovered: w.Recovered, Reqs: w.Reqs, Bytes: w.Bytes, Report: w.Report}
	if w.ErrKind != "" || w.Err != "" {
		ev.Err = &workerError{kind: w.ErrKind, text: w.Err}
	}
	return ev, w.Seq, w.Ack, nil
}

// workerError is an error a worker reported, by kind, so that errorKind and
// errors.Is read it as they read the error it stands for.
type workerError struct{ kind, text string }

func (e *workerError) Error() string { return e.text }

func (e *workerError) Is(target error) bool {
	return workerErrorKinds[e.kind] != nil && workerErrorKinds[e.kind] == target
}

var workerErrorKinds = map[string]error{
	"unknown_outcome": backends.ErrUnknownOutcome,
	"session_lost":    backends.ErrSessionLost,
	"lock_lost":       recipes.ErrLockLost,
	"not_held":        recipes.ErrNotHeld,
	"timeout":         context.DeadlineExceeded,
	"no_node":         backends.ErrNoNode,
	"node_exists":     backends.ErrNodeExists,
}

// lockCommandKind is what the parent tells a worker after its spec.
type lockCommandKind string

const (
	cmdStart lockCommandKind = "start" // start the loop: its clock starts now
	cmdAck   lockCommandKind = "ack"   // event Seq is recorded: go on
)

// lockCommand is one line from the parent after the spec.
type lockCommand struct {
	Cmd lockCommandKind `json:"cmd"`
	Seq uint64          `json:"seq,omitempty"`
}

func encodeCommand(c lockCommand) []byte {
	b, _ := json.Marshal(c) // a string and a number: cannot fail
	return append(b, '\n')
}

func decodeCommand(line []byte) (lockCommand, error) {
	var c lockCommand
	if err := json.Unmarshal(line, &c); err != nil {
		return c, fmt.Errorf("%w: unreadable command %q: %w", errLockProtocol, line, err)
	}
	switch {
	case c.Cmd == cmdStart && c.Seq == 0, c.Cmd == cmdAck && c.Seq > 0:
		return c, nil
	}
	return c, fmt.Errorf("%w: unknown command %q", errLockProtocol, line)
}
