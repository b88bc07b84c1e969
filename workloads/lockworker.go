package workloads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/recipes/variants"
)

// A lock worker is one client of the lock workload in a process of its own
// (zkbench re-executing itself as `zkbench __lock-worker`), so that a fault
// can stop it with SIGSTOP — its session's heartbeats, timers and writes
// stop with it, as in a long GC pause or a frozen VM — and continue it. It
// runs the same loop as the clients in the parent (lockClient.run) and
// sends its events to the parent (see lockevents.go for the protocol).

// LockWorkerCommand is the hidden zkbench command that runs RunLockWorker.
const LockWorkerCommand = "__lock-worker"

// LockWorkerSpec is what a lock worker is told to do: run client Client of
// a lock case in a closed loop (acquire Variant's lock at Path, hold, release,
// think) on one session opened from Config.
type LockWorkerSpec struct {
	Client  int           `json:"client"`
	Variant string        `json:"variant"`
	Path    string        `json:"path"`
	Hold    time.Duration `json:"hold_ns"`
	Think   time.Duration `json:"think_ns"`
	// Work, if set, is the ledger's work each critical section does
	// instead of the register writes and the hold.
	Work *WorkSpec `json:"work,omitempty"`
	// Config is the backend configuration, passed to the worker's
	// LockWorkerOpen unread.
	Config json.RawMessage `json:"config"`
}

// LockWorkerOpen opens the backend a lock worker opens its one session on,
// from the configuration the parent sent. closeFn (nil: nothing) releases
// it; it is called after the session is closed. ctx bounds the open.
type LockWorkerOpen func(ctx context.Context, config json.RawMessage) (b backends.Backend, closeFn func() error, err error)

// lockWorkerOpenTimeout bounds reading the spec and opening the session.
const lockWorkerOpenTimeout = 30 * time.Second

// ErrLockWorker: a lock worker could not run (bad spec, no session) or was
// sent a command it does not know.
var ErrLockWorker = errors.New("workloads: lock worker")

// RunLockWorker is a lock worker process's main: it reads the spec from in,
// opens the session, reports it, waits for the start command, and runs the
// client's loop (lockClient.run), sending every event to out, until in
// reaches EOF (the lock is released first, on a fresh bounded context), its
// session ends, or ctx is cancelled (then as at EOF). It closes the session
// before it returns. A spec or command it cannot read is reported as an
// error event and returned, wrapping ErrLockWorker.
func RunLockWorker(ctx context.Context, open LockWorkerOpen, in io.Reader, out io.Writer) error {
	rd := bufio.NewReader(in)
	w := &lockEventWriter{out: out}
	fail := func(err error) error {
		_ = w.event(lockEvent{Kind: evError, Err: err})
		return fmt.Errorf("%w: %w", ErrLockWorker, err)
	}
	var spec LockWorkerSpec
	line, err := readLineCtx(ctx, rd, lockWorkerOpenTimeout)
	if err != nil {
		return fail(fmt.Errorf("read spec: %w", err))
	}
	if err := json.Unmarshal([]byte(line), &spec); err != nil {
		return fail(fmt.Errorf("spec: %w", err))
	}
	v, err := variants.Locks().Lookup(spec.Variant)
	if err != nil {
		return fail(err)
	}
	octx, cancel := context.WithTimeout(ctx, lockWorkerOpenTimeout)
	defer cancel()
	b, closeBackend, err := open(octx, spec.Config)
	if err != nil {
		return fail(fmt.Errorf("open session: %w", err))
	}
	if closeBackend != nil {
		defer func() { _ = closeBackend() }()
	}
	// The session is counted here and its counts sent with every event,
	// with the backend's witness: the parent adds them to the case's
	// client counts.
	reg := instrument.NewRegistry()
	s, err := instrument.WrapBackend(b, reg).NewSession(octx)
	if err != nil {
		return fail(fmt.Errorf("open session: %w", err))
	}
	cancel()
	defer func() { _ = s.Close() }()
	witness, _ := b.(backends.Witnesser)
	l, err := v.New(s, spec.Path)
	if err != nil {
		return fail(err)
	}
	w.report = func() *workerReport {
		r := &workerReport{Counts: reg.Total()}
		if witness != nil {
			r.Witness = witness.Witness()
		}
		return r
	}
	if err := w.event(lockEvent{Kind: evSession, Session: s.ID()}); err != nil {
		return fmt.Errorf("%w: %w", ErrLockWorker, err)
	}

	// Wait for start; EOF before it means the case ended first.
	line, err = readLineCtx(ctx, rd, 0)
	if err != nil {
		return nil
	}
	if c, err := decodeCommand([]byte(line)); err != nil || c.Cmd != cmdStart {
		if err == nil {
			err = fmt.Errorf("%w: %s before start", errLockProtocol, c.Cmd)
		}
		return fail(err)
	}
	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	acks := make(chan uint64, 1)
	w.acks, w.done = acks, ctx.Done()
	badCommand := make(chan error, 1)
	go func() {
		defer stop() // EOF: the parent says stop
		defer close(acks)
		if err := readAcks(rd, acks); err != nil {
			_ = w.event(lockEvent{Kind: evError, At: time.Since(start), Err: err})
			badCommand <- err
		}
	}()

	now := func() time.Duration { return time.Since(start) }
	client := &lockClient{lock: l, session: s, hold: spec.Hold, think: spec.Think, now: now}
	if spec.Work != nil {
		client.work = &ledgerWork{spec: *spec.Work, s: s, client: spec.Client, now: now}
	}
	if err := client.run(runCtx, w); err != nil {
		return fmt.Errorf("%w: %w", ErrLockWorker, err)
	}
	select {
	case err := <-badCommand:
		return fmt.Errorf("%w: %w", ErrLockWorker, err)
	default:
	}
	if sessionEnded(s) && ctx.Err() == nil {
		_ = w.event(lockEvent{Kind: evSessionLost, At: time.Since(start)})
	}
	return nil
}

// readAcks passes the parent's acks to acks until EOF. Any other command,
// or an ack while one is already pending (the loop waits for one at a
// time), is a protocol error.
func readAcks(rd *bufio.Reader, acks chan<- uint64) error {
	for {
		line, err := rd.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			c, cerr := decodeCommand(line)
			if cerr == nil && c.Cmd != cmdAck {
				cerr = fmt.Errorf("%w: %s after start", errLockProtocol, c.Cmd)
			}
			if cerr != nil {
				return cerr
			}
			select {
			case acks <- c.Seq:
			default:
				return fmt.Errorf("%w: ack of event %d while another is pending", errLockProtocol, c.Seq)
			}
		}
		if err != nil {
			return nil
		}
	}
}

// lockEventWriter is a worker's lockSink: it numbers its events and writes
// each as one JSON line to the parent, and after an exit waits for the
// parent's ack. Safe for concurrent use (the command reader reports a bad
// command with it).
type lockEventWriter struct {
	out io.Writer
	// acks carries the sequence numbers the parent acknowledged; closed at
	// the parent's EOF, after which nothing waits. Nil before start.
	acks <-chan uint64
	// done ends a wait for an ack: the worker is told to stop (a signal)
	// and releases without it.
	done <-chan struct{}
	// report, if set, reads the worker's counts, sent with every event.
	report func() *workerReport

	mu  sync.Mutex
	seq uint64
}

var _ lockSink = (*lockEventWriter)(nil)

func (w *lockEventWriter) event(ev lockEvent) error {
	ack := (ev.Kind == evExit || ev.Kind == evStep) && w.acks != nil
	w.mu.Lock()
	if w.report != nil {
		ev.Report = w.report()
	}
	w.seq++
	seq := w.seq
	line, err := encodeEvent(seq, ev, ack)
	if err == nil {
		_, err = w.out.Write(append(line, '\n'))
	}
	w.mu.Unlock()
	if err != nil || !ack {
		return err
	}
	// Only the loop waits, one event at a time: the next ack is this one's.
	select {
	case got, ok := <-w.acks:
		if ok && got != seq {
			return fmt.Errorf("%w: ack of event %d while waiting for %d", errLockProtocol, got, seq)
		}
	case <-w.done:
	}
	return nil
}

// readLineCtx reads one line from rd, without its newline, giving up when
// ctx ends or, if d > 0, after d. The read itself goes on in the background
// until the line or EOF comes: callers stop reading rd after an error.
func readLineCtx(ctx context.Context, rd *bufio.Reader, d time.Duration) (string, error) {
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		line, err := rd.ReadString('\n')
		if err != nil && line != "" && errors.Is(err, io.EOF) {
			err = nil // a last line without a newline
		}
		ch <- res{strings.TrimRight(line, "\r\n"), err}
	}()
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case r := <-ch:
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	case <-timeout:
		return "", fmt.Errorf("nothing within %v", d)
	}
}
