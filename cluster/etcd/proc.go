package etcd

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/cluster/internal/members"
	"github.com/zkbench/zkbench/internal/spawn"
)

// errPortTaken: a member could not bind a port picked free; StartLocal
// retries on fresh ports.
var errPortTaken = errors.New("cluster/etcd: port already in use")

// memberProcs returns the processes of l's members, none running.
func (l *Local) memberProcs(n int) *members.Procs {
	return members.New(&l.mu, n, members.Spec{
		Pkg: "cluster/etcd", ErrNoMember: errNoMember, Detach: l.st.Detach,
		Command: func(i int) (*exec.Cmd, string, string) {
			m := l.st.Members[i]
			cmd := exec.Command(l.st.Exe, append(append([]string(nil), l.st.Args...), m.Args()...)...)
			return cmd, m.LogPath, "etcd member " + m.Name
		},
		SetPID: func(i, pid int) { l.st.Members[i].PID = pid },
	})
}

// Kill SIGKILLs member i (from 0) and waits for it to exit: a crash.
// Killing a member that is not running does nothing.
func (l *Local) Kill(i int) error { return l.procs.Kill(i) }

// Restart stops member i if it runs (SIGTERM, SIGKILL after 5 s; a leader
// first hands over its leadership), starts it again on the same ports and
// data, and waits under ctx until it answers Status with a leader known.
func (l *Local) Restart(ctx context.Context, i int) error {
	if err := l.procs.Restart(ctx, i, 5*time.Second); err != nil {
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
	_, err := l.procs.Signal(i, sig)
	return err
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
