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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/spawn"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/results"
)

// ClientProcesses runs chosen clients of a lock case in worker processes
// of their own (RunLockWorker) instead of goroutines of this one, so that a
// fault can stop one with SIGSTOP and continue it (faults.Workers).
//
// The parent reads each worker's events and feeds them to the case's
// checker, register, acquire histogram, series and operation counts as the
// in-process clients do, so Ops still add up (issued = succeeded + failed
// + unknown + still waiting). Two differences: a worker's register writes reach the
// register in this process when their lines are read, which is when such a
// write "arrives at the resource" (a paused worker's late write arrives
// when it wakes and prints it); and its requests and watch events are not
// in the client-side counts (backends/instrument runs in the worker). The
// workers ask first: the in-process clients start once each worker's first
// acquisition has ended (at most a second each), so that the client a
// pause-client fault names is at the head of the queue when the case starts.
// The open loop (Rate > 0) is not supported: its schedule is shared in
// this process.
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
}

// lockProcStopTimeout bounds a worker's exit after it was told to stop (it
// releases first); then it is killed.
const lockProcStopTimeout = 15 * time.Second

// procEvent is one line of a worker, its offset on the worker's clock.
type procEvent struct {
	off  time.Duration
	kind string
	args string
}

// lockProc is one worker process seen from the case.
type lockProc struct {
	client  int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *tailBuffer
	events  chan procEvent // closed at the worker's stdout EOF
	exited  chan struct{}  // closed once cmd.Wait returned
	started func(client, pid int)
	first   chan struct{} // closed when its first acquisition ended
	killed  atomic.Bool   // it did not stop in time and was killed
	lost    bool          // it reported session-lost
	note    string        // why it stopped early, for the result
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
		for sc.Scan() {
			offText, rest, _ := strings.Cut(sc.Text(), " ")
			kind, args, _ := strings.Cut(rest, " ")
			off, err := strconv.ParseInt(offText, 10, 64)
			if err != nil {
				kind, args = "error", "unreadable line: "+sc.Text()
			}
			p.events <- procEvent{off: time.Duration(off), kind: kind, args: args}
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

// awaitSession waits for the worker's "session" line.
func (p *lockProc) awaitSession(ctx context.Context) (int64, error) {
	t := time.NewTimer(lockWorkerOpenTimeout + 5*time.Second)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			switch {
			case !ok:
				return 0, p.failure("exited before its session opened")
			case ev.kind == "session":
				return strconv.ParseInt(ev.args, 10, 64)
			case ev.kind == "error":
				return 0, p.failure(ev.args)
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

// run starts the worker's loop and turns its events into wk's accounting,
// as lockWorker.run does for an in-process client, until the worker exits.
// When ctx ends it continues the worker (should a fault have left it
// stopped) and closes its stdin: the worker releases and exits, or is
// killed after lockProcStopTimeout.
func (p *lockProc) run(ctx context.Context, wk *lockWorker, log Recorder) {
	base := wk.window.Now()
	if _, err := io.WriteString(p.stdin, "start\n"); err != nil {
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
		ticket             int
		asking, holding    bool
		asked              time.Duration
		token              int64
		measured           bool
		firstOnce          sync.Once
		firstDone          = func() { firstOnce.Do(func() { close(p.first) }) }
		errWorkerExited    = errors.New("the worker process exited while waiting")
		errLostWhileHolder = errors.New("session ended while holding the lock")
	)
	defer firstDone()
	for ev := range p.events {
		at := base + ev.off
		switch ev.kind {
		case "asked":
			ticket, asking, asked = wk.checker.Ask(), true, at
		case "granted":
			tok, wakeText, _ := strings.Cut(ev.args, " ")
			token, _ = strconv.ParseInt(tok, 10, 64)
			_ = wakeText // the worker's watch events are not counted here, so neither are its waits
			asking, holding = false, true
			measured = wk.settle(asked, at, nil)
			wk.checker.Grant(wk.id, ticket, token, at, measured)
			if token != 0 {
				wk.fence.Grant(token, wk.id)
			}
			if measured {
				results.Record(wk.acquire, at-asked)
				wk.series.Add(at - wk.window.MeasureStart())
			}
			firstDone()
		case "failed":
			kind, text, _ := strings.Cut(ev.args, " ")
			asking = false
			wk.checker.Withdraw(ticket)
			wk.settle(asked, at, &workerError{kind: kind, text: text})
			firstDone()
		case "write":
			tok, _ := strconv.ParseInt(ev.args, 10, 64)
			wk.fence.Write(tok, wk.id) // arrives at the register now
		case "lost":
			wk.count("lock_lost", errLostWhileHolder, measured)
		case "exit":
			holding = false
			wk.checker.Release(wk.id, at)
		case "release-failed":
			kind, text, _ := strings.Cut(ev.args, " ")
			wk.count("release_"+kind, &workerError{kind: kind, text: text}, measured)
		case "session-lost":
			p.lost = true
			log.Event("session", "lost", p.client)
		case "error":
			p.note = fmt.Sprintf("client %d's worker process: %s", p.client, ev.args)
		}
	}
	<-p.exited
	// A worker that died (killed) mid-call acts no more from now.
	now := wk.window.Now()
	if asking {
		wk.checker.Withdraw(ticket)
		wk.settle(asked, now, errWorkerExited)
	}
	if holding {
		wk.checker.Release(wk.id, now)
	}
	if p.killed.Load() {
		p.note = fmt.Sprintf("client %d's worker process did not stop within %v of the end of the case: killed", p.client, lockProcStopTimeout)
	}
	if ctx.Err() == nil && !p.lost && p.note == "" {
		p.note = p.failure("exited during the case").Error()
	}
}

// awaitFirst waits until the worker's first acquisition ended, up to d or
// ctx.
func (p *lockProc) awaitFirst(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.first:
	case <-ctx.Done():
	case <-t.C:
	}
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

// clientRemap opens sessions for in-process clients whose indices skip the
// worker clients: OpenClients' i-th session is client ids[i].
type clientRemap struct {
	backends.Backend
	ids []int
}

func (b clientRemap) NewSession(ctx context.Context) (backends.Session, error) {
	if i, ok := backends.ClientOf(ctx); ok && i >= 0 && i < len(b.ids) {
		ctx = backends.WithClient(ctx, b.ids[i])
	}
	return b.Backend.NewSession(ctx)
}

// lockClients opens c's in-process clients and starts its worker
// processes. ids[i] is the client index of clients.Sessions[i]; procs are
// the workers, in c.Processes.Clients order.
func lockClients(ctx context.Context, c Case, lockPath string, log Recorder) (clients *Clients, ids []int, procs []*lockProc, err error) {
	var remote []int
	if c.Processes != nil {
		remote = c.Processes.Clients
	}
	for i := range c.Clients {
		if !slices.Contains(remote, i) {
			ids = append(ids, i)
		}
	}
	if len(remote) > 0 {
		switch {
		case c.Config.Rate > 0:
			return nil, nil, nil, fmt.Errorf("%w: clients in worker processes need the closed loop (rate 0): the open loop's schedule is shared in this process", ErrBadCase)
		case len(ids) == 0:
			return nil, nil, nil, fmt.Errorf("%w: every one of the %d clients would run in a worker process: at least one must run here", ErrBadCase, c.Clients)
		case slices.ContainsFunc(remote, func(r int) bool { return r < 0 || r >= c.Clients }):
			return nil, nil, nil, fmt.Errorf("%w: worker clients %v: the case has clients 0..%d", ErrBadCase, remote, c.Clients-1)
		case c.Processes.Command == nil:
			return nil, nil, nil, fmt.Errorf("%w: worker clients without a command to run them", ErrBadCase)
		}
		spec := LockWorkerSpec{Variant: c.Variant, Path: lockPath, Hold: c.Config.Hold, Think: c.Config.Think, Config: c.Processes.Config}
		if procs, err = startLockProcs(ctx, c.Processes, spec); err != nil {
			return nil, nil, nil, err
		}
	}
	b := c.Backend
	events := log.Event
	if len(remote) > 0 {
		b = clientRemap{Backend: b, ids: ids}
		events = func(kind, what string, i int) { log.Event(kind, what, ids[i]) }
	}
	clients, err = OpenClients(ctx, b, len(ids), WithOpenProgress(log.Progress), WithSessionEvents(events))
	if err != nil {
		for _, p := range procs {
			p.kill()
		}
		return nil, nil, nil, err
	}
	return clients, ids, procs, nil
}

// procNote says what a case with worker clients does not measure.
func procNote(procs []*lockProc) string {
	ids := make([]string, len(procs))
	for i, p := range procs {
		ids[i] = strconv.Itoa(p.client)
	}
	return fmt.Sprintf("client %s ran in a worker process: its requests and watch events are not in the client-side counts "+
		"(which per-operation client counts divide by every client's acquisitions), and its register writes arrived when this process read them",
		strings.Join(ids, ", "))
}
