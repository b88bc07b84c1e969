// Package saved keeps local clusters that outlive a zkbench command
// (`zkbench cluster up|status|down`, and `clean` finding their endpoints):
// the state file of each, written atomically under a folder lock, the
// members' processes told apart from unrelated ones that reuse a pid (by
// /proc), and how to start them detached, check them and stop them.
package saved

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/internal/procstat"
)

// ErrNotSaved: no state file where one was looked for.
var ErrNotSaved = errors.New("no cluster saved")

// Cluster is the state file `zkbench cluster up` writes and `cluster
// status|down` and `clean` read: the cluster package's own State plus what
// the commands need to find and remove it.
type Cluster struct {
	Backend backends.Kind `json:"backend"`
	Nodes   int           `json:"nodes"`
	Started time.Time     `json:"started"`
	// Dir holds every member's data, config and log; `down` removes it.
	Dir       string             `json:"dir"`
	Endpoints []string           `json:"endpoints"`
	ZooKeeper *zkcluster.State   `json:"zookeeper,omitempty"`
	Etcd      *etcdcluster.State `json:"etcd,omitempty"`
}

// Member is one member's process as saved.
type Member struct {
	Name     string
	Endpoint string
	PID      int
	// Mark is a command-line argument of this member alone (its config
	// file or data folder), which tells its process from an unrelated one
	// that got its pid after it ended.
	Mark string
	Log  string
}

// members lists the saved members in order.
func (s *Cluster) Members() []Member {
	var ms []Member
	switch {
	case s.ZooKeeper != nil:
		for _, m := range s.ZooKeeper.Members {
			ms = append(ms, Member{Name: "node" + strconv.Itoa(m.ID), Endpoint: m.Endpoint(), PID: m.PID, Mark: m.ConfigPath, Log: m.LogPath})
		}
	case s.Etcd != nil:
		for _, m := range s.Etcd.Members {
			ms = append(ms, Member{Name: m.Name, Endpoint: m.Endpoint(), PID: m.PID, Mark: m.DataDir, Log: m.LogPath})
		}
	}
	return ms
}

// running counts the members whose process still runs.
func (s *Cluster) Running() int {
	n := 0
	for _, m := range s.Members() {
		if m.Runs() {
			n++
		}
	}
	return n
}

// runs reports whether the member's process is alive: its pid exists, is
// not a zombie waiting to be reaped, and its command line holds Mark.
func (m Member) Runs() bool {
	if m.PID <= 0 || m.Mark == "" {
		return false
	}
	if !procstat.Alive(m.PID) {
		return false
	}
	args, err := procstat.Cmdline(m.PID)
	return err == nil && slices.Contains(args, m.Mark)
}

// stateDir is where cluster state lives by default:
// $XDG_STATE_HOME/zkbench, else ~/.local/state/zkbench.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "zkbench"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no folder for cluster state (%v): set XDG_STATE_HOME or HOME, or give --state FILE", err)
	}
	return filepath.Join(home, ".local", "state", "zkbench"), nil
}

// defaultStatePath is the state file of the backend's cluster.
func DefaultPath(kind backends.Kind) (string, error) {
	dir, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "cluster-"+string(kind)+".json"), nil
}

// Path is the absolute path of the state file given (--state), or of the
// backend's default one when none is.
func Path(kind backends.Kind, given string) (string, error) {
	if given == "" {
		var err error
		if given, err = DefaultPath(kind); err != nil {
			return "", err
		}
	}
	return filepath.Abs(given)
}

// loadSaved reads a state file; ErrNotSaved if there is none.
func Load(path string) (*Cluster, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s", ErrNotSaved, path)
	}
	if err != nil {
		return nil, err
	}
	var s Cluster
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s is not a zkbench cluster state file (%v): if no cluster runs from it, remove it", path, err)
	}
	if (s.ZooKeeper == nil) == (s.Etcd == nil) || len(s.Members()) == 0 {
		return nil, fmt.Errorf("%s names no zookeeper or etcd members: if no cluster runs from it, remove it", path)
	}
	return &s, nil
}

// writeSaved writes the state file atomically.
func Write(path string, s *Cluster) error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cluster-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// lockStateDir takes an exclusive lock on the folder of a state file, so
// that two cluster commands do not start or stop the same cluster at once.
func LockDir(path string) (unlock func(), err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another zkbench cluster command is working in %s: wait for it to finish", dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// safeToRemove checks that dir is a folder zkbench may delete: absolute,
// not / or the home folder, and holding every member's files.
func (s *Cluster) SafeToRemove() error {
	d := s.Dir
	home, _ := os.UserHomeDir()
	if d == "" || !filepath.IsAbs(d) || filepath.Clean(d) != d || d == "/" || d == home {
		return fmt.Errorf("state names folder %q, which zkbench will not remove", d)
	}
	for _, m := range s.Members() {
		if !strings.HasPrefix(m.Mark, d+string(filepath.Separator)) {
			return fmt.Errorf("state names folder %s, but member %s lives at %s: not removing it", d, m.Name, m.Mark)
		}
	}
	return nil
}

// stopMembers ends the members group by group (each group's processes at
// once): SIGCONT and SIGTERM, then SIGKILL to those still running after
// grace or when ctx ends. Processes that no longer run as the member (see
// runs) are left alone. It fails if a process survives SIGKILL for 5 s.
func StopMembers(ctx context.Context, groups [][]Member, grace time.Duration) error {
	for _, g := range groups {
		var live []Member
		for _, m := range g {
			if m.Runs() {
				_ = syscall.Kill(m.PID, syscall.SIGCONT)
				_ = syscall.Kill(m.PID, syscall.SIGTERM)
				live = append(live, m)
			}
		}
		if WaitGone(ctx, live, grace) {
			continue
		}
		for _, m := range live {
			if m.Runs() {
				_ = syscall.Kill(m.PID, syscall.SIGKILL)
			}
		}
		if !WaitGone(context.WithoutCancel(ctx), live, 5*time.Second) {
			var pids []string
			for _, m := range live {
				if m.Runs() {
					pids = append(pids, strconv.Itoa(m.PID))
				}
			}
			return fmt.Errorf("processes %s survived SIGKILL for 5s", strings.Join(pids, ", "))
		}
	}
	return nil
}

// waitGone polls until no member in ms runs, for up to d or until ctx ends.
func WaitGone(ctx context.Context, ms []Member, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := 0
		for _, m := range ms {
			if m.Runs() {
				left++
			}
		}
		if left == 0 {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startDetached starts the cluster with detached processes and waits until
// it serves. stopCluster undoes it.
func Start(ctx context.Context, kind backends.Kind, nodes int, dir string) (*Cluster, func(context.Context) error, error) {
	s := &Cluster{Backend: kind, Nodes: nodes, Started: time.Now().UTC().Truncate(time.Second), Dir: dir}
	switch kind {
	case backends.ZooKeeper:
		// Timed for the runs' default session: a lost leader is given up
		// before such a session expires (and longer ones are granted).
		c, err := zkcluster.Start(ctx, zkcluster.Options{Nodes: nodes, Dir: dir, Detach: true, SessionTimeout: zkbackend.DefaultSessionTimeout})
		if err != nil {
			return nil, nil, fmt.Errorf("start local ZooKeeper: %w", err)
		}
		st := c.State()
		s.ZooKeeper, s.Endpoints = &st, c.Endpoints()
		return s, c.Stop, nil
	default:
		l, err := etcdcluster.StartLocal(ctx, etcdcluster.Options{Nodes: nodes, Dir: dir, Detach: true})
		if err != nil {
			return nil, nil, fmt.Errorf("start local etcd: %w", err)
		}
		st := l.State()
		s.Etcd, s.Endpoints = &st, l.Endpoints()
		return s, l.Stop, nil
	}
}

// removeSaved removes a stopped cluster's folder and then its state file.
func Remove(s *Cluster, state string) error {
	if err := s.SafeToRemove(); err != nil {
		return fmt.Errorf("%w; remove it and %s yourself once no member runs", err, state)
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("remove %s: %w", s.Dir, err)
	}
	if err := os.Remove(state); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", state, err)
	}
	return nil
}

// stopOrder groups the members for stopMembers: etcd followers before the
// leader (a stopping leader first tries to hand over its leadership, which
// waits on followers that are stopping too); ZooKeeper all at once.
func StopOrder(ctx context.Context, s *Cluster) [][]Member {
	ms := s.Members()
	if s.Backend != backends.Etcd || len(ms) == 1 {
		return [][]Member{ms}
	}
	checks := Checks(ctx, s.Backend, ms, time.Second)
	var followers, leaders []Member
	for i, m := range ms {
		if checks[i].Err == nil && checks[i].Info.Role == "leader" {
			leaders = append(leaders, m)
		} else {
			followers = append(followers, m)
		}
	}
	return [][]Member{followers, leaders}
}

// Check is what one member answered.
type Check struct {
	Info backends.MemberInfo
	Err  error
}

// Checks asks every running member, at once, for its role and version
// (the backend's own Preflight on that member alone), each within timeout.
func Checks(ctx context.Context, kind backends.Kind, ms []Member, timeout time.Duration) []Check {
	checks := make([]Check, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		if !m.Runs() {
			checks[i].Err = errors.New("not running")
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			checks[i] = checkMember(cctx, kind, m.Endpoint)
		})
	}
	wg.Wait()
	return checks
}

func checkMember(ctx context.Context, kind backends.Kind, endpoint string) Check {
	var (
		b   backends.Backend
		err error
	)
	if kind == backends.ZooKeeper {
		b, err = zkbackend.New(zkbackend.Config{Endpoints: []string{endpoint}})
	} else {
		b, err = etcdbackend.New(etcdbackend.Config{Endpoints: []string{endpoint}})
	}
	if err != nil {
		return Check{Err: err}
	}
	defer b.Close()
	info, err := b.Preflight(ctx)
	if err != nil {
		return Check{Err: err}
	}
	return Check{Info: info.Members[0]}
}
