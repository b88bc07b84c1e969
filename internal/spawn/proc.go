package spawn

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/internal/procstat"
)

// Proc is one server process: a child started by the caller (Watch), or a
// process found by PID (Adopt) whose exit is noticed by polling. Its
// methods may be called from any goroutine.
type Proc struct {
	pid    int
	cmd    *exec.Cmd // nil when adopted
	group  bool      // Terminate and Kill stop its process group (WatchGroup)
	exited chan struct{}
}

// Watch returns the Proc of cmd, which must have been started. A goroutine
// waits for cmd, then calls after (if not nil; e.g. to close its log), then
// marks the Proc exited.
func Watch(cmd *exec.Cmd, after func()) *Proc {
	p := &Proc{pid: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		if after != nil {
			after()
		}
		close(p.exited)
	}()
	return p
}

// WatchGroup is Watch for a child that Start made the leader of its own
// process group: its Terminate and Kill stop the whole group (SIGTERM,
// SIGKILL to -pid), so that the child's own children (a shell's commands, a
// program's workers) stop with it, and Terminate waits, within its grace,
// until the group is empty, not only the child. Signal still signals the
// child alone.
//
// The parent-death signal is the child's only: if zkbench is SIGKILLed, the
// child dies but its own children do not (the kernel clears the signal at
// each fork).
func WatchGroup(cmd *exec.Cmd, after func()) *Proc {
	p := Watch(cmd, after)
	p.group = true
	return p
}

// Launch starts cmd with its stdout and stderr appended to logf and returns
// its Proc; logf is closed once cmd has exited. Unless detach, cmd is started
// by Start (it dies with zkbench); with detach it gets a session of its own
// (setsid) and outlives zkbench. If the start fails, logf is closed and the
// start error returned as is, for the caller to prefix.
func Launch(cmd *exec.Cmd, logf *os.File, detach bool) (*Proc, error) {
	cmd.Stdout, cmd.Stderr = logf, logf
	var err error
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
	} else {
		err = Start(cmd)
	}
	if err != nil {
		logf.Close()
		return nil, err
	}
	return Watch(cmd, func() { logf.Close() }), nil
}

// Adopt watches a process that is not our child, polling every 50 ms until
// it is gone; nil if it is not running now.
func Adopt(pid int) *Proc {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return nil
	}
	p := &Proc{pid: pid, exited: make(chan struct{})}
	go func() {
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		close(p.exited)
	}()
	return p
}

// PID is the process ID.
func (p *Proc) PID() int { return p.pid }

// Exited is closed once the process has exited (and, for a child, been
// waited for).
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Signal sends sig: through os.Process for a child, by PID for an adopted
// process.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.cmd != nil {
		return p.cmd.Process.Signal(sig)
	}
	return syscall.Kill(p.pid, sig)
}

// stopSignal sends sig to the process, or to its group (WatchGroup).
func (p *Proc) stopSignal(sig syscall.Signal) error {
	if p.group {
		// The group's ID stays allocated while any member lives, so it
		// names no other process even once the leader has been waited for.
		return syscall.Kill(-p.pid, sig)
	}
	return p.Signal(sig)
}

// groupEmpty reports whether no process of p's group is left (a member
// that has exited counts until its new parent, init, has reaped it).
func (p *Proc) groupEmpty() bool {
	return syscall.Kill(-p.pid, 0) == syscall.ESRCH
}

// Kill sends SIGKILL (to the group, with WatchGroup) and waits until the
// process has exited: a crash.
func (p *Proc) Kill() {
	_ = p.stopSignal(syscall.SIGKILL)
	<-p.exited
}

// Terminate sends SIGCONT (in case it is paused) and SIGTERM, waits up to
// grace or until ctx ends, then SIGKILLs and waits for the exit. Cancelling
// ctx only cuts the grace short; Terminate still waits for the process to
// die after SIGKILL. With WatchGroup the signals go to the whole group, and
// the grace lasts until every member has gone: members still there when it
// ends are SIGKILLed too.
func (p *Proc) Terminate(ctx context.Context, grace time.Duration) {
	_ = p.stopSignal(syscall.SIGCONT)
	_ = p.stopSignal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		if !p.group {
			return
		}
		// The leader is gone; the rest of its group has the rest of the
		// grace.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for !p.groupEmpty() {
			select {
			case <-ctx.Done():
				p.Kill()
				return
			case <-t.C:
				p.Kill()
				return
			case <-tick.C:
			}
		}
		return
	case <-ctx.Done():
	case <-t.C:
	}
	p.Kill()
}

// Alive reports whether process pid exists and has not exited: a zombie
// (exited, not yet reaped: an orphan in a container whose init does not
// reap) is not alive.
func Alive(pid int) bool { return procstat.Alive(pid) }

// LogTail returns up to n last lines of a file (read from its last 64 KiB),
// or why it cannot, in parentheses.
func LogTail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(raw) > 64<<10 {
		raw = raw[len(raw)-64<<10:]
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
