package workloads

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/internal/spawn"
)

// ClientProcesses runs chosen clients of a lock case in worker processes
// of their own (RunLockWorker) instead of goroutines of this one, so that a
// fault can stop one with SIGSTOP and continue it (faults.Workers).
//
// The parent reads each worker's events and feeds them to the case's
// checker, register, acquire histogram, series and operation counts as the
// in-process clients do, so Ops still add up (issued = succeeded + failed
// + unknown + still waiting). A worker counts its requests and watch
// events itself (backends/instrument runs in the worker) and sends its
// totals with every event: the case's client counts add each worker's
// latest (see lockClients). A worker's register writes reach the
// register in this process when their lines are read, which is when such a
// write "arrives at the resource" (a paused worker's late write arrives
// when it wakes and prints it). The
// workers ask first: the in-process clients start once each worker's first
// acquisition has ended — its grant or failure has been recorded, or it
// exited — so that the client a pause-client fault names is the first holder
// of the case (a worker paused before its first grant holds the others back
// until it is continued, as a first holder would). The open loop (Rate > 0)
// is not supported: its schedule is shared in this process.
type ClientProcesses struct {
	// Clients are the indices of the clients run in worker processes.
	Clients []int
	// Command returns a new, unstarted command that runs RunLockWorker
	// (`zkbench __lock-worker`). The workload sets its stdin and stdout
	// (and stderr, if nil, to a short buffer quoted in errors), starts it
	// with internal/spawn, so that it dies with this process, and waits
	// for it.
	Command func(client int) *exec.Cmd
	// Config is the backend configuration the worker opens its session
	// with (LockWorkerSpec.Config).
	Config json.RawMessage
	// Started, if set, is called with client's process id once it runs,
	// and with 0 once it has exited.
	Started func(client, pid int)
	// Session, if set, is called with the id of the session client's
	// worker opened, once it is open.
	Session func(client int, id int64)
	// Crasher, if set, is given the case's workers while it runs, so that
	// a fault can kill one (kill-client, kill-holder).
	Crasher *Crasher
}

// lockProcStopTimeout bounds a worker's exit after it was told to stop (it
// releases first); then it is killed.
const lockProcStopTimeout = 15 * time.Second

// procEvent is one decoded line of a worker, its At on the worker's clock,
// or why the line broke the protocol (err).
type procEvent struct {
	lockEvent
	seq uint64
	ack bool // the worker waits for the ack of seq
	err error
}

// lockProc is one worker process seen from the case.
type lockProc struct {
	client  int
	cmd     *exec.Cmd
	stdin   io.WriteCloser // the spec, then lockCommands; closed to stop
	stderr  *tailBuffer
	events  chan procEvent // closed at the worker's stdout EOF
	exited  chan struct{}  // closed once cmd.Wait returned
	started func(client, pid int)
	first   chan struct{} // closed when its first acquisition ended, or it exited
	killed  atomic.Bool   // it did not stop in time and was killed
	lost    bool          // it reported session-lost
	note    string        // why it stopped early, for the result
	// crasher, if set, may kill it between two steps of its work; crash
	// says how a fault killed it (nil: none did).
	crasher *Crasher
	crash   atomic.Pointer[procCrash]
	// remote, if set, takes the counts the worker reports with its
	// events into the case's client counts; last is its latest report
	// and gap, by request type, the most calls it made between two.
	remote *instrument.Remote
	last   *workerReport
	gap    map[string]int64
	// unreported: it was killed between two reports, its calls since the
	// last bounded by gap (not bounded if it reported fewer than twice).
	unreported bool
}

// report passes a worker's counts to the case's client counts.
func (p *lockProc) report(r *workerReport) {
	if p.remote == nil || r == nil {
		return
	}
	if p.last != nil {
		if p.gap == nil {
			p.gap = map[string]int64{}
		}
		for k, n := range r.Counts.Requests {
			p.gap[k] = max(p.gap[k], n-p.last.Counts.Requests[k])
		}
	}
	p.last = r
	p.remote.Report(r.Counts, r.Witness)
}

// reportLost ends the worker's counts when it was killed other than at a
// step's ack (where it waits, its counts reported): the calls it made
// after its last report are unknown, at most as many of each type as it
// made between two reports.
func (p *lockProc) reportLost(atStep bool) {
	if p.remote == nil || atStep {
		return
	}
	p.unreported = true
	p.remote.Lost(p.gap)
}

// startLockProcs starts a worker for each of cp's clients and waits under
// ctx until each has its session open. On error it kills those started.
func startLockProcs(ctx context.Context, cp *ClientProcesses, spec LockWorkerSpec) ([]*lockProc, error) {
	var procs []*lockProc
	kill := func() {
		for _, p := range procs {
			p.kill()
		}
	}
	for _, c := range cp.Clients {
		p, err := startLockProc(cp, c, spec)
		if err != nil {
			kill()
			return nil, err
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		id, err := p.awaitSession(ctx)
		if err != nil {
			kill()
			return nil, err
		}
		if cp.Session != nil {
			cp.Session(p.client, id)
		}
	}
	return procs, nil
}

func startLockProc(cp *ClientProcesses, client int, spec LockWorkerSpec) (*lockProc, error) {
	cmd := cp.Command(client)
	p := &lockProc{client: client, cmd: cmd, events: make(chan procEvent, 1024), exited: make(chan struct{}),
		started: cp.Started, first: make(chan struct{})}
	if cmd.Stderr == nil {
		p.stderr = &tailBuffer{max: 2048}
		cmd.Stderr = p.stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := spawn.Start(cmd); err != nil {
		return nil, fmt.Errorf("workloads: start client %d's worker process: %w", client, err)
	}
	p.stdin = stdin
	if p.started != nil {
		p.started(client, cmd.Process.Pid)
	}
	go func() {
		defer close(p.exited)
		defer close(p.events)
		sc := bufio.NewScanner(stdout)
		var last uint64
		for sc.Scan() {
			ev, seq, ack, err := decodeEvent(sc.Bytes())
			if err == nil && seq != last+1 {
				err = fmt.Errorf("%w: event %d after %d", errLockProtocol, seq, last)
			}
			last = seq
			p.events <- procEvent{lockEvent: ev, seq: seq, ack: ack, err: err}
		}
		if err := sc.Err(); err != nil {
			p.events <- procEvent{err: fmt.Errorf("%w: reading events: %w", errLockProtocol, err)}
			_, _ = io.Copy(io.Discard, stdout) // until it is killed
		}
		// Forget the pid before reaping it, so that no signal can reach
		// another process that gets the number.
		if p.started != nil {
			p.started(client, 0)
		}
		_ = cmd.Wait()
	}()
	spec.Client = client
	line, err := json.Marshal(spec)
	if err != nil {
		p.kill()
		return nil, err
	}
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		p.kill()
		return nil, fmt.Errorf("workloads: client %d's worker process: %w", client, err)
	}
	return p, nil
}

// awaitSession waits for the worker's session event, its first.
func (p *lockProc) awaitSession(ctx context.Context) (int64, error) {
	t := time.NewTimer(lockWorkerOpenTimeout + 5*time.Second)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			switch {
			case !ok:
				return 0, p.failure("exited before its session opened")
			case ev.err != nil:
				return 0, p.failure(ev.err.Error())
			case ev.Kind == evSession:
				return ev.Session, nil
			case ev.Kind == evError:
				return 0, p.failure(errText(ev.Err))
			default:
				return 0, p.failure(fmt.Sprintf("%v: %s before its session", errLockProtocol, ev.Kind))
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("workloads: client %d's worker process: %w", p.client, ctx.Err())
		case <-t.C:
			return 0, p.failure("no session within the open timeout")
		}
	}
}

func (p *lockProc) failure(what string) error {
	msg := fmt.Sprintf("workloads: client %d's worker process: %s", p.client, what)
	if p.stderr != nil {
		if s := strings.TrimSpace(p.stderr.String()); s != "" {
			msg += " (stderr: " + s + ")"
		}
	}
	return errors.New(msg)
}

// kill SIGKILLs the worker (continuing it first is not needed: SIGKILL
// ends a stopped process too) and waits for it.
func (p *lockProc) kill() {
	_ = p.stdin.Close()
	_ = p.cmd.Process.Kill()
	for range p.events {
	}
	<-p.exited
}

// run starts the worker's loop and hands its events to rec, the same
// recorder an in-process client's loop feeds, until the worker exits; it
// acknowledges each event that asks for it once rec has it. The worker's
// clock starts when it reads the start command, a moment after this reads
// the case's: its offsets move by that moment. When ctx ends it continues
// the worker (should a fault have left it stopped) and closes its stdin: the
// worker releases and exits, or is killed after lockProcStopTimeout. An
// event that breaks the protocol is noted and the worker killed: it acts no
// more from then, as if it had died.
func (p *lockProc) run(ctx context.Context, rec *lockRecorder, log Recorder) {
	base := rec.window.Now()
	if _, err := p.stdin.Write(encodeCommand(lockCommand{Cmd: cmdStart})); err != nil {
		p.note = fmt.Sprintf("client %d's worker process did not take the start: %v", p.client, err)
	}
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	go func() {
		select {
		case <-ctx.Done():
		case <-stopWatch:
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.stdin.Close()
		t := time.NewTimer(lockProcStopTimeout)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-stopWatch:
		case <-t.C:
			p.killed.Store(true)
			_ = p.cmd.Process.Kill()
		}
	}()

	var (
		firstOnce sync.Once
		firstDone = func() { firstOnce.Do(func() { close(p.first) }) }
		broken    error // the protocol error the worker was killed for
		// killedAtStep: a kill-holder fault killed it waiting for a
		// step's ack, everything it did reported.
		killedAtStep bool
	)
	defer firstDone()
	for ev := range p.events {
		if broken != nil {
			continue // killed: drain what it wrote before
		}
		err := ev.err
		if err == nil {
			p.report(ev.Report)
			err = p.handle(ev, base, rec, log)
		}
		if err != nil {
			broken = err
			_ = p.cmd.Process.Kill()
			firstDone()
			continue
		}
		if ev.Kind == evGranted || ev.Kind == evFailed {
			firstDone()
		}
		if ev.Kind == evStep && p.crasher != nil && p.crasher.atStep(p, ev.lockEvent) {
			killedAtStep = true
			continue // killed instead of acknowledged: its EOF follows
		}
		if ev.ack {
			// Write errors mean the worker is gone: its EOF follows.
			_, _ = p.stdin.Write(encodeCommand(lockCommand{Cmd: cmdAck, Seq: ev.seq}))
		}
	}
	<-p.exited
	crash, was := p.crashOf(), rec.state
	if crash != nil || broken != nil || p.killed.Load() {
		p.reportLost(killedAtStep)
	}
	if crash != nil && rec.ledger != nil {
		rec.ledger.crash(ledgerCrash{At: crash.at, Client: p.client, Fault: crash.fault,
			Holding: rec.state == stateHolding, Op: rec.op, Step: rec.step})
	}
	// A worker that died (killed) mid-call acts no more from now.
	rec.abandon(rec.window.Now(), errWorkerExited)
	switch {
	case crash != nil:
		log.Event("fault", fmt.Sprintf("client %d's worker killed (%s) while %s", p.client, crash.fault, was), p.client)
		p.note = fmt.Sprintf("client %d's worker process was killed by a %s fault at %v of the case's clock", p.client, crash.fault, crash.at.Round(time.Millisecond))
	case broken != nil:
		p.note = fmt.Sprintf("client %d's worker process was killed: %v", p.client, broken)
	case p.killed.Load():
		p.note = fmt.Sprintf("client %d's worker process did not stop within %v of the end of the case: killed", p.client, lockProcStopTimeout)
	}
	if ctx.Err() == nil && !p.lost && p.note == "" && crash == nil {
		p.note = p.failure("exited during the case").Error()
	}
}

// errWorkerExited settles the acquisition a worker was waiting in when it
// died.
var errWorkerExited = errors.New("the worker process exited while waiting")

// handle takes one event of a running worker: the loop's go to rec, at
// base plus their offset; the process's own are noted here. Every kind the
// worker sends is handled; one it must not send now is an error.
func (p *lockProc) handle(ev procEvent, base time.Duration, rec *lockRecorder, log Recorder) error {
	switch ev.Kind {
	case evSessionLost:
		p.lost = true
		log.Event("session", "lost", p.client)
		return nil
	case evError:
		p.note = fmt.Sprintf("client %d's worker process: %s", p.client, errText(ev.Err))
		return nil
	case evSession:
		return fmt.Errorf("%w: a second session event", errLockProtocol)
	}
	e := ev.lockEvent
	e.At += base
	if e.Kind == evAsked {
		e.Intended += base
	}
	return rec.event(e)
}

// awaitFirst waits until the worker's first acquisition ended (or it
// exited, or broke the protocol), or ctx ended.
func (p *lockProc) awaitFirst(ctx context.Context) {
	select {
	case <-p.first:
	case <-ctx.Done():
	}
}

func errText(err error) string {
	if err == nil {
		return "(no error given)"
	}
	return err.Error()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = slices.Clone(t.b[len(t.b)-t.max:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
