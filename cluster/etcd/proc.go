package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/internal/spawn"
)

// errPortTaken: a member could not bind a port picked free; StartLocal
// retries on fresh ports.
var errPortTaken = errors.New("cluster/etcd: port already in use")

// startMember starts member i; its output is appended to its log.
func (l *Local) startMember(i int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.procs[i]; p != nil && p.Running() {
		return nil
	}
	m := l.st.Members[i]
	logf, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cluster/etcd: %w", err)
	}
	fmt.Fprintf(logf, "=== zkbench: starting etcd member %s at %s\n", m.Name, time.Now().Format(time.RFC3339))
	cmd := exec.Command(l.st.Exe, append(append([]string(nil), l.st.Args...), m.Args()...)...)
	p, err := spawn.Launch(cmd, logf, l.st.Detach)
	if err != nil {
		return fmt.Errorf("cluster/etcd: start %s: %w", l.st.Exe, err)
	}
	l.procs[i] = p
	l.st.Members[i].PID = p.PID()
	return nil
}

// forget clears member i's process if it is still p.
func (l *Local) forget(i int, p *spawn.Proc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.procs[i] == p {
		l.procs[i] = nil
		l.st.Members[i].PID = 0
	}
}

func (l *Local) proc(i int) (*spawn.Proc, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < 0 || i >= len(l.procs) {
		return nil, fmt.Errorf("%w: %d of %d", errNoMember, i, len(l.procs))
	}
	return l.procs[i], nil
}

func (l *Local) stopMember(ctx context.Context, i int, grace time.Duration) {
	if p, _ := l.proc(i); p != nil {
		p.Terminate(ctx, grace)
		l.forget(i, p)
	}
}

// Kill SIGKILLs member i (from 0) and waits for it to exit: a crash.
// Killing a member that is not running does nothing.
func (l *Local) Kill(i int) error {
	p, err := l.proc(i)
	if err != nil || p == nil {
		return err
	}
	p.Kill()
	l.forget(i, p)
	return nil
}

func (l *Local) killAll() {
	for i := range l.procs {
		_ = l.Kill(i)
	}
}

// Restart stops member i if it runs (SIGTERM, SIGKILL after 5 s; a leader
// first hands over its leadership), starts it again on the same ports and
// data, and waits under ctx until it answers Status with a leader known.
func (l *Local) Restart(ctx context.Context, i int) error {
	if _, err := l.proc(i); err != nil {
		return err
	}
	l.stopMember(ctx, i, 5*time.Second)
	if err := l.startMember(i); err != nil {
		return err
	}
	return l.waitReady(ctx, []int{i})
}

// Pause freezes member i with SIGSTOP: it holds its connections but answers
// nothing, like a server in a long GC pause or cut off from the network.
func (l *Local) Pause(i int) error { return l.signal(i, syscall.SIGSTOP) }

// Resume continues a paused member with SIGCONT.
func (l *Local) Resume(i int) error { return l.signal(i, syscall.SIGCONT) }

func (l *Local) signal(i int, sig syscall.Signal) error {
	p, err := l.proc(i)
	if err != nil {
		return err
	}
	if p == nil || !p.Running() {
		return fmt.Errorf("cluster/etcd: member %d is not running", i)
	}
	return p.Signal(sig)
}

// startError describes a failed start with the tail of member i's log.
func (l *Local) startError(i int, what string) error {
	m := l.State().Members[i]
	tail := spawn.LogTail(m.LogPath, 15)
	err := fmt.Errorf("cluster/etcd: member %s (%s) %s; log %s ends:\n%s", m.Name, m.Endpoint(), what, m.LogPath, tail)
	if strings.Contains(tail, "address already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}
