package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
)

// errNoSavedCluster: no state file where one was looked for.
var errNoSavedCluster = errors.New("no cluster saved")

// savedCluster is the state file `zkbench cluster up` writes and `cluster
// status|down` and `clean` read: the cluster package's own State plus what
// the commands need to find and remove it.
type savedCluster struct {
	Backend backends.Kind `json:"backend"`
	Nodes   int           `json:"nodes"`
	Started time.Time     `json:"started"`
	// Dir holds every member's data, config and log; `down` removes it.
	Dir       string             `json:"dir"`
	Endpoints []string           `json:"endpoints"`
	ZooKeeper *zkcluster.State   `json:"zookeeper,omitempty"`
	Etcd      *etcdcluster.State `json:"etcd,omitempty"`
}

// memberProc is one member's process as saved.
type memberProc struct {
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
func (s *savedCluster) members() []memberProc {
	var ms []memberProc
	switch {
	case s.ZooKeeper != nil:
		for _, m := range s.ZooKeeper.Members {
			ms = append(ms, memberProc{Name: "node" + strconv.Itoa(m.ID), Endpoint: m.Endpoint(), PID: m.PID, Mark: m.ConfigPath, Log: m.LogPath})
		}
	case s.Etcd != nil:
		for _, m := range s.Etcd.Members {
			ms = append(ms, memberProc{Name: m.Name, Endpoint: m.Endpoint(), PID: m.PID, Mark: m.DataDir, Log: m.LogPath})
		}
	}
	return ms
}

// running counts the members whose process still runs.
func (s *savedCluster) running() int {
	n := 0
	for _, m := range s.members() {
		if m.runs() {
			n++
		}
	}
	return n
}

// runs reports whether the member's process is alive: its pid exists, is
// not a zombie waiting to be reaped, and its command line holds Mark.
func (m memberProc) runs() bool {
	if m.PID <= 0 || m.Mark == "" {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(m.PID) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X' {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(m.PID) + "/cmdline")
	if err != nil {
		return false
	}
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if arg == m.Mark {
			return true
		}
	}
	return false
}

// stateDir is where cluster state lives by default:
// $XDG_STATE_HOME/zkbench, else ~/.local/state/zkbench.
func stateDir() (string, error) {
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
func defaultStatePath(kind backends.Kind) (string, error) {
	dir, err := stateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "cluster-"+string(kind)+".json"), nil
}

// loadSaved reads a state file; errNoSavedCluster if there is none.
func loadSaved(path string) (*savedCluster, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s", errNoSavedCluster, path)
	}
	if err != nil {
		return nil, err
	}
	var s savedCluster
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s is not a zkbench cluster state file (%v): if no cluster runs from it, remove it", path, err)
	}
	if (s.ZooKeeper == nil) == (s.Etcd == nil) || len(s.members()) == 0 {
		return nil, fmt.Errorf("%s names no zookeeper or etcd members: if no cluster runs from it, remove it", path)
	}
	return &s, nil
}

// writeSaved writes the state file atomically.
func writeSaved(path string, s *savedCluster) error {
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
func lockStateDir(path string) (unlock func(), err error) {
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
func (s *savedCluster) safeToRemove() error {
	d := s.Dir
	home, _ := os.UserHomeDir()
	if d == "" || !filepath.IsAbs(d) || filepath.Clean(d) != d || d == "/" || d == home {
		return fmt.Errorf("state names folder %q, which zkbench will not remove", d)
	}
	for _, m := range s.members() {
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
func stopMembers(ctx context.Context, groups [][]memberProc, grace time.Duration) error {
	for _, g := range groups {
		var live []memberProc
		for _, m := range g {
			if m.runs() {
				_ = syscall.Kill(m.PID, syscall.SIGCONT)
				_ = syscall.Kill(m.PID, syscall.SIGTERM)
				live = append(live, m)
			}
		}
		if waitGone(ctx, live, grace) {
			continue
		}
		for _, m := range live {
			if m.runs() {
				_ = syscall.Kill(m.PID, syscall.SIGKILL)
			}
		}
		if !waitGone(context.WithoutCancel(ctx), live, 5*time.Second) {
			var pids []string
			for _, m := range live {
				if m.runs() {
					pids = append(pids, strconv.Itoa(m.PID))
				}
			}
			return fmt.Errorf("processes %s survived SIGKILL for 5s", strings.Join(pids, ", "))
		}
	}
	return nil
}

// waitGone polls until no member in ms runs, for up to d or until ctx ends.
func waitGone(ctx context.Context, ms []memberProc, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := 0
		for _, m := range ms {
			if m.runs() {
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
