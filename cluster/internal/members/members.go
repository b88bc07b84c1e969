// Package members keeps the processes of a local cluster's members, one
// per member by index, for cluster/etcd and cluster/zookeeper: it starts a
// member with its output appended to its log, stops, kills, restarts and
// signals it, and records each member's process id in the cluster's state
// as it changes; Endpoints and PIDs read the members' records. What a
// member runs and when it is ready stay with the cluster. Folder gives a
// cluster its folder.
package members

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/internal/spawn"
)

// Folder returns the cluster's folder: dir, made with perm if missing, or
// if dir is "" a fresh temporary folder named after pattern (os.MkdirTemp),
// which the cluster owns and removes when it stops.
func Folder(dir, pattern string, perm os.FileMode) (path string, owned bool, err error) {
	if dir == "" {
		d, err := os.MkdirTemp("", pattern)
		if err != nil {
			return "", false, err
		}
		return d, true, nil
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return "", false, err
	}
	return dir, false, nil
}

// Spec is what a cluster tells Procs about its members.
type Spec struct {
	// Pkg begins every error: "cluster/etcd".
	Pkg string
	// ErrNoMember is wrapped when a member index is out of range.
	ErrNoMember error
	// Command returns member i's command, the log its output is appended
	// to, and the member as the log's header names it ("server 1").
	Command func(i int) (cmd *exec.Cmd, logPath, name string)
	// SetPID records member i's process id in the cluster's state (0: it
	// is not running).
	SetPID func(i, pid int)
	// Detach lets the members outlive this process (spawn.Launch).
	Detach bool
}

// Procs is the member processes of one cluster, by member index; nil where
// a member is not running. Its methods may be called concurrently. They
// hold the cluster's lock while they read or change a process, and call
// Spec.Command and Spec.SetPID with it held.
type Procs struct {
	mu    *sync.Mutex
	spec  Spec
	procs []*spawn.Proc
}

// New returns the processes of n members, none running, guarded by the
// cluster's lock mu.
func New(mu *sync.Mutex, n int, spec Spec) *Procs {
	return &Procs{mu: mu, spec: spec, procs: make([]*spawn.Proc, n)}
}

// Len is the number of members.
func (s *Procs) Len() int { return len(s.procs) }

// Adopt takes member i's process pid, found again after this process
// started it (a saved cluster), and reports whether it still runs. Call it
// before the Procs is shared.
func (s *Procs) Adopt(i, pid int) bool {
	p := spawn.Adopt(pid)
	s.procs[i] = p
	return p != nil
}

// Start starts member i unless it runs; its output is appended to its log
// after a header line.
func (s *Procs) Start(i int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[i]; p != nil && p.Running() {
		return nil
	}
	cmd, logPath, name := s.spec.Command(i)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", s.spec.Pkg, err)
	}
	fmt.Fprintf(logf, "=== zkbench: starting %s at %s\n", name, time.Now().Format(time.RFC3339))
	p, err := spawn.Launch(cmd, logf, s.spec.Detach)
	if err != nil {
		return fmt.Errorf("%s: start %s: %w", s.spec.Pkg, cmd.Args[0], err)
	}
	s.procs[i] = p
	s.spec.SetPID(i, p.PID())
	return nil
}

// forget clears member i's process if it is still p.
func (s *Procs) forget(i int, p *spawn.Proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs[i] == p {
		s.procs[i] = nil
		s.spec.SetPID(i, 0)
	}
}

// Proc returns member i's process, nil if it is not running, or
// Spec.ErrNoMember.
func (s *Procs) Proc(i int) (*spawn.Proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.procs) {
		return nil, fmt.Errorf("%w: %d of %d", s.spec.ErrNoMember, i, len(s.procs))
	}
	return s.procs[i], nil
}

// Stop ends member i if it runs: SIGTERM, then SIGKILL after grace or when
// ctx ends.
func (s *Procs) Stop(ctx context.Context, i int, grace time.Duration) {
	if p, _ := s.Proc(i); p != nil {
		p.Terminate(ctx, grace)
		s.forget(i, p)
	}
}

// StopAll stops every member but last at once, as Stop does, and then
// last (-1: none is kept for last).
func (s *Procs) StopAll(ctx context.Context, grace time.Duration, last int) {
	var wg sync.WaitGroup
	for i := range s.procs {
		if i != last {
			wg.Go(func() { s.Stop(ctx, i, grace) })
		}
	}
	wg.Wait()
	if last >= 0 {
		s.Stop(ctx, last, grace)
	}
}

// Kill SIGKILLs member i and waits for it to exit. Killing a member that is
// not running does nothing.
func (s *Procs) Kill(i int) error {
	p, err := s.Proc(i)
	if err != nil || p == nil {
		return err
	}
	p.Kill()
	s.forget(i, p)
	return nil
}

// KillAll kills every running member.
func (s *Procs) KillAll() {
	for i := range s.procs {
		_ = s.Kill(i)
	}
}

// Restart stops member i if it runs (as Stop, with grace) and starts it
// again; the cluster then waits for it to be ready.
func (s *Procs) Restart(ctx context.Context, i int, grace time.Duration) error {
	if _, err := s.Proc(i); err != nil {
		return err
	}
	s.Stop(ctx, i, grace)
	return s.Start(i)
}

// Signal sends sig to member i, which must be running, and returns its
// process.
func (s *Procs) Signal(i int, sig syscall.Signal) (*spawn.Proc, error) {
	p, err := s.Proc(i)
	if err != nil {
		return nil, err
	}
	if p == nil || !p.Running() {
		return nil, fmt.Errorf("%s: member %d is not running", s.spec.Pkg, i)
	}
	return p, p.Signal(sig)
}

// Endpoints returns each member's endpoint, running or not.
func Endpoints[M interface{ Endpoint() string }](ms []M) []string {
	eps := make([]string, len(ms))
	for i, m := range ms {
		eps[i] = m.Endpoint()
	}
	return eps
}

// PIDs maps each running member's endpoint to its process id (pid says
// which, 0 when it is not running).
func PIDs[M interface{ Endpoint() string }](ms []M, pid func(M) int) map[string]int {
	pids := make(map[string]int)
	for _, m := range ms {
		if p := pid(m); p != 0 {
			pids[m.Endpoint()] = p
		}
	}
	return pids
}

// All is the indices of n members, from 0.
func All(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
