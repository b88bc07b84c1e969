package workloads

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes/variants"
)

// A lock worker is one client of the lock workload in a process of its own
// (zkbench re-executing itself as `zkbench __lock-worker`), so that a fault
// can stop it with SIGSTOP — its session's heartbeats, timers and writes
// stop with it, as in a long GC pause or a frozen VM — and continue it.
//
// Protocol, one line each way per message:
//
//	parent → worker: a LockWorkerSpec as JSON; later "start"; then EOF to stop
//	worker → parent: "<offset-ns> <event> [args]"
//
// The offset is the worker's monotonic time since it read "start" (0
// before). Events, in the order the in-process client does the same
// things (lockWorker.run):
//
//	session <id>              the session is open (before start)
//	asked                     about to call Acquire
//	granted <token> <wakeups> Acquire returned the lock
//	failed <kind> <text>      Acquire failed (kind as errorKind names it)
//	write <token>             a write to the shared register (right after
//	                          a grant, and before leaving)
//	lost                      the session ended while holding the lock
//	exit                      left the critical section, about to Release
//	released                  Release succeeded
//	release-failed <kind> <text>
//	session-lost              the session ended; the worker exits
//	error <text>              the worker cannot go on (bad spec, no session)

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
	// Config is the backend configuration, passed to the worker's
	// LockWorkerOpen unread.
	Config json.RawMessage `json:"config"`
}

// LockWorkerOpen opens a lock worker's one session from the configuration
// the parent sent. closeFn releases what it opened besides the session (the
// backend); it is called after the session is closed. ctx bounds the open.
type LockWorkerOpen func(ctx context.Context, config json.RawMessage) (s backends.Session, closeFn func() error, err error)

// lockWorkerOpenTimeout bounds reading the spec and opening the session.
const lockWorkerOpenTimeout = 30 * time.Second

// ErrLockWorker: a lock worker could not run (bad spec, no session).
var ErrLockWorker = errors.New("workloads: lock worker")

// RunLockWorker is a lock worker process's main: it reads the spec from in,
// opens the session, reports it, waits for "start", and runs the client's
// loop, reporting every event to out, until in reaches EOF (the lock is
// released first, on a fresh bounded context), its session ends, or ctx is
// cancelled (then as at EOF). It closes the session before it returns.
func RunLockWorker(ctx context.Context, open LockWorkerOpen, in io.Reader, out io.Writer) error {
	rd := bufio.NewReader(in)
	w := &workerOut{out: out}
	fail := func(err error) error {
		w.emit("error", oneLine(err.Error()))
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
	s, closeBackend, err := open(octx, spec.Config)
	cancel()
	if err != nil {
		return fail(fmt.Errorf("open session: %w", err))
	}
	defer func() {
		_ = s.Close()
		if closeBackend != nil {
			_ = closeBackend()
		}
	}()
	l, err := v.New(s, spec.Path)
	if err != nil {
		return fail(err)
	}
	w.emit("session", strconv.FormatInt(s.ID(), 10))

	// Wait for "start"; EOF before it means the case ended first.
	for {
		line, err := readLineCtx(ctx, rd, 0)
		if err != nil {
			return nil
		}
		if line == "start" {
			break
		}
	}
	w.start = time.Now()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, rd) // until EOF: the parent says stop
		stop()
	}()

	for runCtx.Err() == nil {
		w.emit("asked")
		g, err := l.Acquire(runCtx)
		if err != nil {
			w.emit("failed", errorKind(err), oneLine(err.Error()))
			if runCtx.Err() != nil || sessionEnded(s) || !sleepCtx(runCtx, errorBackoff) {
				break
			}
			continue
		}
		w.emit("granted", strconv.FormatInt(g.Token, 10), strconv.Itoa(g.Wakeups))
		if g.Token != 0 {
			w.emit("write", strconv.FormatInt(g.Token, 10))
		}
		if spec.Hold > 0 {
			t := time.NewTimer(spec.Hold)
			select {
			case <-t.C:
			case <-runCtx.Done():
			case <-g.Lost:
				w.emit("lost")
			}
			t.Stop()
		}
		// As in the in-process loop: the last write goes out before the
		// holder looks at whether its lock is still held.
		if g.Token != 0 {
			w.emit("write", strconv.FormatInt(g.Token, 10))
		}
		w.emit("exit")
		rctx, cancel := context.WithTimeout(context.WithoutCancel(runCtx), releaseTimeout)
		err = l.Release(rctx)
		cancel()
		if err != nil {
			w.emit("release-failed", errorKind(err), oneLine(err.Error()))
			if sessionEnded(s) {
				break
			}
		} else {
			w.emit("released")
		}
		if spec.Think > 0 && !sleepCtx(runCtx, spec.Think) {
			break
		}
	}
	if sessionEnded(s) && ctx.Err() == nil {
		w.emit("session-lost")
	}
	return nil
}

// workerOut writes a worker's event lines, one Write each.
type workerOut struct {
	out   io.Writer
	start time.Time // zero before "start"
}

func (w *workerOut) emit(event string, args ...string) {
	var off time.Duration
	if !w.start.IsZero() {
		off = time.Since(w.start)
	}
	var b strings.Builder
	b.WriteString(strconv.FormatInt(int64(off), 10))
	b.WriteByte(' ')
	b.WriteString(event)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(a)
	}
	b.WriteByte('\n')
	_, _ = io.WriteString(w.out, b.String())
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

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
