package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zkbench/zkbench/cluster/internal/members"
)

// Member is one member process as started: its launch config, log file and
// process id. Part of State, so JSON-encodable.
type Member struct {
	MemberConfig
	// PID is the member's process id; 0 when it is not running.
	PID     int    `json:"pid"`
	LogPath string `json:"log_path"`
}

// Endpoint is the member's client URL.
func (m Member) Endpoint() string { return m.ClientURL }

// State is everything needed to find a running local cluster again: folder,
// ports, binary and process ids. It is JSON-encodable so that a `cluster up`
// command can save it and `cluster status|down` can Open it later.
type State struct {
	Dir     string   `json:"dir"`
	OwnsDir bool     `json:"owns_dir"`
	Exe     string   `json:"exe"`
	Args    []string `json:"args"`
	Detach  bool     `json:"detach,omitempty"`
	Members []Member `json:"members"`
}

// Local is a set of etcd member processes on this machine. Its methods may
// be called concurrently.
type Local struct {
	mu    sync.Mutex
	st    State
	procs *members.Procs
}

// StartLocal starts opts.Nodes members (default 1) as separate processes,
// each `<Exe> <Args...> <member flags>` (by default this binary running
// MemberCommand), on free loopback ports, and waits under ctx until every
// member answers Status and the cluster has a leader. Members get SIGKILL as
// parent-death signal unless opts.Detach. Each member's output goes to
// <Dir>/<name>.log; a failed start quotes its tail and stops everything.
func StartLocal(ctx context.Context, opts Options) (*Local, error) {
	n, err := opts.members("1 or more")
	if err != nil {
		return nil, err
	}
	st := State{Exe: opts.Exe, Args: opts.Args, Detach: opts.Detach}
	if st.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("cluster/etcd: find own executable: %w", err)
		}
		st.Exe = exe
	}
	if st.Args == nil {
		st.Args = []string{MemberCommand}
	}
	dir, owns, err := makeDir(opts.Dir, "zkbench-etcd-local-")
	if err != nil {
		return nil, err
	}
	st.Dir, st.OwnsDir = dir, owns
	l := &Local{st: st}
	l.procs = l.memberProcs(n)
	for attempt := 0; attempt < 3; attempt++ {
		if err = l.startAll(ctx, n, opts.UnsafeNoFsync); err == nil || !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Stop(sctx)
		return nil, err
	}
	return l, nil
}

// startAll lays the members out on fresh ports and starts them all.
func (l *Local) startAll(ctx context.Context, n int, noFsync bool) error {
	l.procs.KillAll()
	cfgs, err := layout(l.st.Dir, n, newToken(), noFsync)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.st.Members = make([]Member, n)
	for i, c := range cfgs {
		os.RemoveAll(c.DataDir) // a failed earlier attempt's data
		l.st.Members[i] = Member{MemberConfig: c, LogPath: filepath.Join(l.st.Dir, c.Name+".log")}
	}
	l.mu.Unlock()
	for i := range cfgs {
		if err := l.procs.Start(i); err != nil {
			return err
		}
	}
	return l.waitReady(ctx, members.All(n))
}

// Open re-attaches to a cluster from its saved State. Members whose PID no
// longer runs are marked stopped. Restart works as for a started cluster;
// Stop signals the processes by PID.
func Open(st State) *Local {
	l := &Local{st: st}
	l.st.Members = append([]Member(nil), st.Members...)
	l.procs = l.memberProcs(len(st.Members))
	for i, m := range l.st.Members {
		if !l.procs.Adopt(i, m.PID) {
			l.st.Members[i].PID = 0
		}
	}
	return l
}

// Endpoints returns every member's client URL, running or not.
func (l *Local) Endpoints() []string { return members.Endpoints(l.State().Members) }

// PIDs maps each running member's endpoint to its process id.
func (l *Local) PIDs() map[string]int {
	return members.PIDs(l.State().Members, func(m Member) int { return m.PID })
}

// State returns a copy of the cluster's state, for saving.
func (l *Local) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.st
	st.Args = append([]string(nil), l.st.Args...)
	st.Members = append([]Member(nil), l.st.Members...)
	return st
}

// Stop ends every member — followers first, so that the leader does not
// wait to hand over its leadership — with SIGTERM, then SIGKILL after 10 s
// or when ctx ends, and removes the folder if StartLocal made it. Safe to
// call twice.
func (l *Local) Stop(ctx context.Context) error {
	l.procs.StopAll(ctx, 10*time.Second, l.leaderIndex(ctx))
	if l.st.OwnsDir {
		if err := os.RemoveAll(l.st.Dir); err != nil {
			return fmt.Errorf("cluster/etcd: %w", err)
		}
	}
	return nil
}
