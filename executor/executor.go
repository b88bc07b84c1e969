// Package executor is the ZooKeeper guide's Executor and DataMonitor as a
// tool on both backends (zkbench exec): it keeps a program running on the
// data of one node. It fetches the node's data, writes it to a file and
// starts the program; when the data changes it rewrites the file and
// restarts the program; when the node is deleted it stops the program and
// waits for the node to come back. A lost connection is not a change (the
// backends retry their reads, and a ZooKeeper watch survives a reconnect);
// an expired session stops the program and ends Run with
// ErrSessionExpired. A program that exits by itself is logged with its
// status and started again on the next change.
//
// The program runs in a process group of its own, and stopping it stops
// the group: a shell's commands and the program's own children stop with
// it (spawn.WatchGroup).
//
// The monitor is the seed's DataMonitor: an exists with a watch, then a
// read of the data, and the program is told of the data only when it
// differs from what it last had (bytes compared), so a watch event that
// changed nothing restarts nothing.
package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/ctxsleep"
	"github.com/zkbench/zkbench/internal/spawn"
)

// ErrSessionExpired: the session ended on the server (ZooKeeper session
// expiry, etcd lease gone); the program was stopped.
var ErrSessionExpired = errors.New("executor: session expired")

// Config says what to follow and what to run.
type Config struct {
	// Node is the path whose data is followed.
	Node string
	// File receives the node's data before each start of Program.
	File string
	// Program and its arguments.
	Program []string
	// Stdout and Stderr receive the program's output (nil: discarded).
	Stdout, Stderr io.Writer
	// Log receives the executor's own lines ("starting", "stopping").
	// Nil: discarded.
	Log io.Writer
	// Grace is how long a stopped program has between SIGTERM and SIGKILL.
	// Default 5s.
	Grace time.Duration
	// Signals, if set, are forwarded to the running program.
	Signals <-chan os.Signal
}

// Executor runs one Config on one session.
type Executor struct {
	cfg   Config
	s     backends.Session
	child *spawn.Proc
	cmd   *exec.Cmd       // the child's, for its exit status
	exit  <-chan struct{} // the child's Exited until its exit is logged, then nil
}

// New returns an executor of cfg on s.
func New(s backends.Session, cfg Config) *Executor {
	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return &Executor{cfg: cfg, s: s}
}

// Run follows the node until ctx ends (the program is stopped and Run
// returns nil) or the session is lost (the program is stopped and Run
// returns an error matching ErrSessionExpired). Errors the backends do not
// retry themselves are logged and retried after a pause.
func (e *Executor) Run(ctx context.Context) error {
	defer e.stop("zkbench is stopping")
	if len(e.cfg.Program) == 0 {
		return errors.New("executor: no program")
	}
	var (
		prev    []byte
		present bool
		started bool
	)
	backoff := 50 * time.Millisecond
	for {
		wctx, cancel := context.WithCancel(ctx)
		exists, data, events, err := e.monitor(wctx)
		if err == nil {
			backoff = 50 * time.Millisecond
			switch {
			case !exists && (present || !started):
				if present {
					e.stop(fmt.Sprintf("%s was deleted", e.cfg.Node))
				}
				fmt.Fprintf(e.cfg.Log, "zkbench exec: waiting for %s to exist\n", e.cfg.Node)
				started = true
			case exists && (!present || !bytes.Equal(data, prev)):
				if err = e.restart(data); err != nil {
					cancel()
					return err
				}
				started = true
			}
			present, prev = exists, data
			err = e.wait(ctx, events)
		}
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, backends.ErrSessionLost):
			e.stop("the session expired")
			return fmt.Errorf("%w: %s: the program was stopped; run zkbench exec again for a new session", ErrSessionExpired, e.cfg.Node)
		case err != nil:
			fmt.Fprintf(e.cfg.Log, "zkbench exec: %v (retrying)\n", err)
			if !ctxsleep.Sleep(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}
}

// monitor is the DataMonitor's step: exists with a watch, then the data.
func (e *Executor) monitor(ctx context.Context) (bool, []byte, <-chan backends.Event, error) {
	exists, _, events, err := e.s.ExistsW(ctx, e.cfg.Node)
	if err != nil || !exists {
		return exists, nil, events, err
	}
	data, _, err := e.s.Get(ctx, e.cfg.Node)
	if errors.Is(err, backends.ErrNoNode) {
		// Deleted since the exists: the watch fires with it.
		return false, nil, events, nil
	}
	return err == nil, data, events, err
}

// wait waits for the watch to fire, forwarding signals meanwhile (to the
// program, not its group) and logging the program's exit if it ends by
// itself.
func (e *Executor) wait(ctx context.Context, events <-chan backends.Event) error {
	for {
		select {
		case ev, ok := <-events:
			switch {
			case !ok:
				return ctx.Err()
			case ev.Type == backends.EventSessionLost:
				return backends.ErrSessionLost
			}
			return nil
		case <-e.exit:
			e.exit = nil
			fmt.Fprintf(e.cfg.Log, "zkbench exec: %s exited (%s) without being stopped; it starts again on the next change of %s\n",
				e.cfg.Program[0], e.cmd.ProcessState, e.cfg.Node)
		case sig := <-e.cfg.Signals:
			if e.child != nil {
				if s, ok := sig.(syscall.Signal); ok {
					_ = e.child.Signal(s)
				}
			}
		case <-e.s.Done():
			return backends.ErrSessionLost
		case <-ctx.Done():
			return nil
		}
	}
}

// restart stops the program if it runs, writes data to the file and starts
// the program again.
func (e *Executor) restart(data []byte) error {
	e.stop(fmt.Sprintf("%s changed", e.cfg.Node))
	if err := os.WriteFile(e.cfg.File, data, 0o644); err != nil {
		return fmt.Errorf("executor: write %s: %w", e.cfg.File, err)
	}
	cmd := exec.Command(e.cfg.Program[0], e.cfg.Program[1:]...)
	cmd.Stdout, cmd.Stderr = e.cfg.Stdout, e.cfg.Stderr
	// Output to a writer that is not a file goes through a pipe, which a
	// child of the program may hold open after the program has exited (or
	// one that left its process group, after the group was killed): give
	// the copy Grace, not forever.
	cmd.WaitDelay = e.cfg.Grace
	fmt.Fprintf(e.cfg.Log, "zkbench exec: starting %s (%d bytes in %s)\n", e.cfg.Program[0], len(data), e.cfg.File)
	if err := spawn.Start(cmd); err != nil {
		return fmt.Errorf("executor: start %s: %w", e.cfg.Program[0], err)
	}
	e.child, e.cmd = spawn.WatchGroup(cmd, nil), cmd
	e.exit = e.child.Exited()
	return nil
}

// stop stops the program and its process group, if it runs or left
// children behind (SIGTERM, SIGKILL after Grace).
func (e *Executor) stop(why string) {
	if e.child == nil {
		return
	}
	if e.child.Running() {
		fmt.Fprintf(e.cfg.Log, "zkbench exec: %s: stopping %s\n", why, e.cfg.Program[0])
	}
	e.child.Terminate(context.Background(), e.cfg.Grace)
	e.child, e.cmd, e.exit = nil, nil, nil
}
