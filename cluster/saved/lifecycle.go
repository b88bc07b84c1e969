package saved

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// Bounds on a saved cluster's members: how long Down waits after SIGTERM
// before SIGKILL, and on starting and stopping them.
const (
	MemberStopGrace = 10 * time.Second
	StartTimeout    = 90 * time.Second
	StopTimeout     = 30 * time.Second
)

// Up starts a cluster of nodes members of kind in dir and saves it at state,
// unless the same cluster already runs there (then it returns that one, with
// started false). It holds the state's lock throughout. A saved cluster
// none of whose processes runs any more is removed first (say is told);
// another running cluster, or one partly running, is an error that says how
// to stop it. dir "" is the state file's name without its extension; it
// must be new or empty. A cluster that started but could not be saved is
// stopped again. ctx bounds the start (at most StartTimeout).
func Up(ctx context.Context, kind backends.Kind, nodes int, dir, state string, say func(string)) (s *Cluster, started bool, err error) {
	if nodes < 1 || nodes%2 == 0 || nodes > 7 {
		return nil, false, fmt.Errorf("--nodes %d: want 1 or an odd ensemble size such as 3", nodes)
	}
	unlock, err := LockDir(state)
	if err != nil {
		return nil, false, err
	}
	defer unlock()

	if old, err := Load(state); err == nil {
		up, all := old.Running(), len(old.Members())
		switch {
		case up == all && old.Backend == kind && old.Nodes == nodes:
			return old, false, nil
		case up == all:
			return nil, false, fmt.Errorf("a %s cluster of %s is already running at %s (state %s): stop it first with `%s`, or give another --state",
				old.Backend, Plural(all, "member"), strings.Join(old.Endpoints, ","), state, DownHint(old.Backend, state))
		case up > 0:
			return nil, false, fmt.Errorf("the %s cluster saved in %s is partly running (%d of %d members): stop what is left with `%s`, then start again",
				old.Backend, state, up, all, DownHint(old.Backend, state))
		}
		say(fmt.Sprintf("Removing stale state %s: none of its %d processes runs any more.", state, all))
		if err := Remove(old, state); err != nil {
			return nil, false, err
		}
	} else if !errors.Is(err, ErrNotSaved) {
		return nil, false, err
	}

	if dir == "" {
		if dir = strings.TrimSuffix(state, filepath.Ext(state)); dir == state {
			dir += ".d"
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, false, err
	}
	if err := checkNewDir(dir); err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	say(fmt.Sprintf("Starting the %s cluster (%s) in %s ...", kind, Plural(nodes, "member"), dir))
	sc, stopCluster, err := Start(ctx, kind, nodes, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, false, fmt.Errorf("interrupted while starting; everything started was stopped: %w", err)
		}
		return nil, false, err
	}
	if err := Write(state, sc); err != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopTimeout)
		defer cancel()
		_ = stopCluster(sctx)
		_ = os.RemoveAll(dir)
		return nil, false, fmt.Errorf("save cluster state (the cluster was stopped again): %w", err)
	}
	return sc, true, nil
}

// checkNewDir refuses a folder that holds anything: Down removes the whole
// folder, so it must be zkbench's alone.
func checkNewDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--dir %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("folder %s is not empty, and cluster down would remove it: give an empty or new --dir; "+
			"if an interrupted cluster up left it, check that no server runs from it (pgrep -f %s) and remove it", dir, dir)
	}
	return nil
}

// Down stops the cluster saved at path (followers before the leader, each
// given MemberStopGrace after SIGTERM) and removes its folder and state;
// found says there was one. A cluster that was not running any more (stale
// state) only has its files removed. say is told what happens.
func Down(ctx context.Context, path string, say func(string)) (found bool, err error) {
	unlock, err := LockDir(path)
	if err != nil {
		return false, err
	}
	defer unlock()
	s, err := Load(path)
	if errors.Is(err, ErrNotSaved) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	ms := s.Members()
	up := s.Running()
	start := time.Now()
	if up == 0 {
		say(fmt.Sprintf("The %s cluster saved in %s was not running (stale state): removing its files.", s.Backend, path))
	} else {
		say(fmt.Sprintf("Stopping the %s cluster (%d of %d members running) ...", s.Backend, up, len(ms)))
		sctx, cancel := context.WithTimeout(ctx, StopTimeout)
		defer cancel()
		if err := StopMembers(sctx, StopOrder(sctx, s), MemberStopGrace); err != nil {
			return true, fmt.Errorf("stop the %s cluster: %w; its state stays in %s", s.Backend, err, path)
		}
	}
	if err := Remove(s, path); err != nil {
		return true, err
	}
	if up > 0 {
		say(fmt.Sprintf("Stopped the %s cluster in %.1fs.", s.Backend, time.Since(start).Seconds()))
	}
	say(fmt.Sprintf("Removed %s and %s.", s.Dir, path))
	return true, nil
}

// Paths are the state files a command looks at: state if given, else the
// default file of kind, or of every backend when kind is "".
func Paths(kind backends.Kind, state string) ([]string, error) {
	if state != "" {
		return []string{state}, nil
	}
	kinds := []backends.Kind{backends.ZooKeeper, backends.Etcd}
	if kind != "" {
		kinds = []backends.Kind{kind}
	}
	var paths []string
	for _, k := range kinds {
		p, err := DefaultPath(k)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// DownHint is the command that stops the cluster of kind saved at path.
func DownHint(kind backends.Kind, path string) string {
	if def, err := DefaultPath(kind); err == nil && def == path {
		return "zkbench cluster down --backend " + string(kind)
	}
	return "zkbench cluster down --state " + path
}

// Report is a saved cluster's health, as `cluster status` shows it.
type Report struct {
	Backend   backends.Kind `json:"backend"`
	StateFile string        `json:"state_file"`
	Dir       string        `json:"dir"`
	Started   time.Time     `json:"started"`
	// Health is "serving" (every member runs and answers), "degraded" or
	// "stale" (no member process runs).
	Health    string         `json:"health"`
	Endpoints []string       `json:"endpoints"`
	Members   []MemberReport `json:"members"`
}

// MemberReport is one member's part of a Report.
type MemberReport struct {
	Name     string        `json:"name"`
	Endpoint string        `json:"endpoint"`
	PID      int           `json:"pid"`
	Running  bool          `json:"running"`
	Role     string        `json:"role,omitempty"`
	Version  string        `json:"version,omitempty"`
	RTT      time.Duration `json:"rtt_ns,omitempty"`
	Error    string        `json:"error,omitempty"`
	Log      string        `json:"log"`
}

// Status checks every member of s (each within timeout) and reports its
// health.
func Status(ctx context.Context, s *Cluster, path string, timeout time.Duration) Report {
	ms := s.Members()
	checks := Checks(ctx, s.Backend, ms, timeout)
	r := Report{Backend: s.Backend, StateFile: path, Dir: s.Dir, Started: s.Started, Endpoints: s.Endpoints}
	running, answering := 0, 0
	for i, m := range ms {
		mr := MemberReport{Name: m.Name, Endpoint: m.Endpoint, PID: m.PID, Running: m.Runs(), Log: m.Log}
		if mr.Running {
			running++
		}
		if c := checks[i]; c.Err != nil {
			mr.Error = c.Err.Error()
		} else {
			answering++
			mr.Role, mr.Version, mr.RTT = c.Info.Role, c.Info.Version, c.Info.RTT
		}
		r.Members = append(r.Members, mr)
	}
	switch {
	case running == 0:
		r.Health = "stale"
	case running == len(ms) && answering == len(ms):
		r.Health = "serving"
	default:
		r.Health = "degraded"
	}
	return r
}

// Plural is "1 member" or "3 members".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
