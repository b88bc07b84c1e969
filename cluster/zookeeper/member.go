package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/internal/spawn"
)

// ErrNoMember: the member index is out of range.
var ErrNoMember = errors.New("cluster/zookeeper: no such member")

// startMember starts member i's JVM; its output is appended to server.log.
func (c *Cluster) startMember(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[i]; p != nil && p.Running() {
		return nil
	}
	m := c.st.Members[i]
	logf, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cluster/zookeeper: %w", err)
	}
	fmt.Fprintf(logf, "=== zkbench: starting server %d at %s\n", m.ID, time.Now().Format(time.RFC3339))
	cmd := exec.Command(c.st.Dist.Java, javaArgs(&c.st, m)...)
	cmd.Dir = m.Dir
	p, err := spawn.Launch(cmd, logf, c.st.Detach)
	if err != nil {
		return fmt.Errorf("cluster/zookeeper: start %s: %w", c.st.Dist.Java, err)
	}
	c.procs[i] = p
	c.st.Members[i].PID = p.PID()
	return nil
}

// forget clears member i's process if it is still p.
func (c *Cluster) forget(i int, p *spawn.Proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs[i] == p {
		c.procs[i] = nil
		c.st.Members[i].PID = 0
	}
}

func (c *Cluster) proc(i int) (*spawn.Proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.procs) {
		return nil, fmt.Errorf("%w: %d of %d", ErrNoMember, i, len(c.procs))
	}
	return c.procs[i], nil
}

// Kill SIGKILLs member i (index from 0) and waits for it to exit: a crash.
// Killing a member that is not running does nothing.
func (c *Cluster) Kill(i int) error {
	p, err := c.proc(i)
	if err != nil || p == nil {
		return err
	}
	p.Kill()
	c.forget(i, p)
	return nil
}

// Restart stops member i if it runs (SIGTERM, SIGKILL after 5 s), starts it
// again on the same ports and data, and waits under ctx until it answers
// srvr as a serving member.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	p, err := c.proc(i)
	if err != nil {
		return err
	}
	if p != nil {
		p.Terminate(ctx, 5*time.Second)
		c.forget(i, p)
	}
	if err := c.startMember(i); err != nil {
		return err
	}
	return c.waitReady(ctx, []int{i})
}

// Pause freezes member i with SIGSTOP: it holds its connections but answers
// nothing, as a server stuck in a long GC pause or a partitioned one. It
// returns once every thread of the JVM has stopped (at most 2 s).
func (c *Cluster) Pause(i int) error { return c.signal(i, syscall.SIGSTOP, true) }

// Resume continues a paused member with SIGCONT, and returns once its
// threads run again (at most 2 s).
func (c *Cluster) Resume(i int) error { return c.signal(i, syscall.SIGCONT, false) }

func (c *Cluster) signal(i int, sig syscall.Signal, stopped bool) error {
	p, err := c.proc(i)
	if err != nil {
		return err
	}
	if p == nil || !p.Running() {
		return fmt.Errorf("cluster/zookeeper: member %d is not running", i)
	}
	if err := p.Signal(sig); err != nil {
		return err
	}
	pid := p.PID()
	for deadline := time.Now().Add(2 * time.Second); allStopped(pid) != stopped; {
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster/zookeeper: member %d (pid %d) did not take %v within 2s", i, pid, sig)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// allStopped reports whether every thread of pid is stopped ('T').
func allStopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if len(stats) == 0 {
		return false
	}
	for _, f := range stats {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		s := string(raw)
		if i := strings.LastIndexByte(s, ')'); i < 0 || i+2 >= len(s) || s[i+2] != 'T' {
			return false
		}
	}
	return true
}
