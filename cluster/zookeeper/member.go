package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/cluster/internal/members"
)

// ErrNoMember: the member index is out of range.
var ErrNoMember = errors.New("cluster/zookeeper: no such member")

// memberProcs returns the processes of c's members, none running: each
// member's JVM, its output appended to server.log.
func (c *Cluster) memberProcs(n int) *members.Procs {
	return members.New(&c.mu, n, members.Spec{
		Pkg: "cluster/zookeeper", ErrNoMember: ErrNoMember, Detach: c.st.Detach,
		Command: func(i int) (*exec.Cmd, string, string) {
			m := c.st.Members[i]
			cmd := exec.Command(c.st.Dist.Java, javaArgs(&c.st, m)...)
			cmd.Dir = m.Dir
			return cmd, m.LogPath, "server " + strconv.Itoa(m.ID)
		},
		SetPID: func(i, pid int) { c.st.Members[i].PID = pid },
	})
}

// Kill SIGKILLs member i (index from 0) and waits for it to exit: a crash.
// Killing a member that is not running does nothing.
func (c *Cluster) Kill(i int) error { return c.procs.Kill(i) }

// Restart stops member i if it runs (SIGTERM, SIGKILL after 5 s), starts it
// again on the same ports and data, and waits under ctx until it answers
// srvr as a serving member.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.procs.Restart(ctx, i, 5*time.Second); err != nil {
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
	p, err := c.procs.Signal(i, sig)
	if err != nil {
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
