package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/cluster/saved"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/runner"
)

// buildZkbench builds the zkbench binary into dir, so that cluster tests
// run the real command in processes of its own: servers started by `up`
// must outlive it, which an in-process command cannot show.
func buildZkbench(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "zkbench")
	start := time.Now()
	build := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built zkbench in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// cli runs the built binary with XDG_STATE_HOME set to stateHome and
// returns stdout, stderr and the exit code.
func cli(t *testing.T, bin, stateHome string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateHome)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A server that kept zkbench's stdout would hold Wait open: fail, not hang.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("zkbench %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String(), code
}

// mustCLI is cli that fails the test on a non-zero exit.
func mustCLI(t *testing.T, bin, stateHome string, args ...string) string {
	t.Helper()
	out, errOut, code := cli(t, bin, stateHome, args...)
	if code != 0 {
		t.Fatalf("zkbench %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// procSession returns a process's parent pid and session id.
func procSession(t *testing.T, pid int) (ppid, sid int) {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // state ppid pgrp session ...
	ppid, _ = strconv.Atoi(f[1])
	sid, _ = strconv.Atoi(f[3])
	return ppid, sid
}

// killSavedOnCleanup SIGKILLs, when the test ends, every member process the
// state file still names, so that no server outlives a failed test.
func killSavedOnCleanup(t *testing.T, statePath string) {
	t.Cleanup(func() {
		s, err := saved.Load(statePath)
		if err != nil {
			return
		}
		for _, m := range s.Members() {
			if m.Runs() {
				t.Logf("killing leftover %s (pid %d)", m.Name, m.PID)
				_ = syscall.Kill(m.PID, syscall.SIGKILL)
			}
		}
		saved.WaitGone(context.Background(), s.Members(), 5*time.Second)
	})
}

// TestClusterCommands runs `zkbench cluster up|status|down` from a built
// binary on a standalone ZooKeeper and a 3-member etcd cluster.
func TestClusterCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds zkbench and starts servers")
	}
	bin := buildZkbench(t, t.TempDir())
	t.Run("zookeeper-1", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		s := checkUp(t, bin, home, backends.ZooKeeper, 1)
		checkStatusServing(t, bin, home, s)
		checkDown(t, bin, home, s)
	})
	t.Run("etcd-3", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		s := checkUp(t, bin, home, backends.Etcd, 3)
		checkStatusServing(t, bin, home, s)

		// Processes gone: degraded with one, stale with all; up replaces
		// stale state with a fresh cluster, which down then stops.
		ms := s.Members()
		_ = syscall.Kill(ms[0].PID, syscall.SIGKILL)
		saved.WaitGone(context.Background(), ms[:1], 5*time.Second)
		if r := statusJSON(t, bin, home); r.Health != "degraded" || r.Members[0].Running || r.Members[0].Error == "" || !r.Members[1].Running {
			t.Errorf("after killing one member: %+v", r)
		}
		for _, m := range ms[1:] {
			_ = syscall.Kill(m.PID, syscall.SIGKILL)
		}
		saved.WaitGone(context.Background(), ms, 5*time.Second)
		if r := statusJSON(t, bin, home); r.Health != "stale" {
			t.Errorf("after killing every member: health %s, want stale", r.Health)
		}
		out := mustCLI(t, bin, home, "cluster", "status")
		if !strings.Contains(out, "stale") || !strings.Contains(out, "zkbench cluster down --backend etcd") {
			t.Errorf("status of stale state does not say so:\n%s", out)
		}
		out = mustCLI(t, bin, home, "cluster", "up", "--backend", "etcd", "--nodes", "3")
		if !strings.Contains(out, "stale state") {
			t.Errorf("up over stale state does not say so:\n%s", out)
		}
		s2, err := saved.Load(statePath(s, home))
		if err != nil {
			t.Fatal(err)
		}
		if s2.Running() != 3 {
			t.Fatalf("fresh cluster after stale state: %d of 3 running", s2.Running())
		}
		checkDown(t, bin, home, s2)
	})
}

// statePath is where the cluster tests' state file lives.
func statePath(s *saved.Cluster, home string) string {
	return filepath.Join(home, "zkbench", "cluster-"+string(s.Backend)+".json")
}

// checkUp starts a cluster with `up` and checks that its processes outlive
// zkbench, in their own session, and serve; then that `up` again is a no-op
// and `up` of another size is refused.
func checkUp(t *testing.T, bin, home string, kind backends.Kind, nodes int) *saved.Cluster {
	t.Helper()
	statePath := filepath.Join(home, "zkbench", "cluster-"+string(kind)+".json")
	killSavedOnCleanup(t, statePath)
	start := time.Now()
	out := mustCLI(t, bin, home, "cluster", "up", "--backend", string(kind), "--nodes", strconv.Itoa(nodes))
	t.Logf("cluster up (%s, %d) returned in %v:\n%s", kind, nodes, time.Since(start).Round(time.Millisecond), out)
	s, err := saved.Load(statePath)
	if err != nil {
		t.Fatal(err)
	}
	ms := s.Members()
	if len(ms) != nodes || len(s.Endpoints) != nodes || s.Backend != kind || s.Nodes != nodes {
		t.Fatalf("state %+v", s)
	}
	want := fmt.Sprintf("zkbench run --backend %s --endpoints %s\n", kind, strings.Join(s.Endpoints, ","))
	if !strings.Contains(out, want) {
		t.Errorf("up does not print %q", want)
	}
	for _, m := range ms {
		if !m.Runs() {
			t.Fatalf("%s (pid %d) does not run after up returned", m.Name, m.PID)
		}
		ppid, sid := procSession(t, m.PID)
		if ppid == os.Getpid() || sid != m.PID {
			t.Errorf("%s (pid %d): parent %d, session %d: not detached into its own session", m.Name, m.PID, ppid, sid)
		}
		if !strings.Contains(out, m.Endpoint) {
			t.Errorf("up does not print endpoint %s", m.Endpoint)
		}
	}
	checkServes(t, kind, s.Endpoints)

	again := mustCLI(t, bin, home, "cluster", "up", "--backend", string(kind), "--nodes", strconv.Itoa(nodes))
	if !strings.Contains(again, "already running") || !strings.Contains(again, want) {
		t.Errorf("second up:\n%s", again)
	}
	if s2, _ := saved.Load(statePath); s2 == nil || s2.Members()[0].PID != ms[0].PID {
		t.Errorf("second up changed the state")
	}
	_, errOut, code := cli(t, bin, home, "cluster", "up", "--backend", string(kind), "--nodes", strconv.Itoa(nodes+2))
	if code == 0 || !strings.Contains(errOut, "already running") || !strings.Contains(errOut, "cluster down --backend "+string(kind)) {
		t.Errorf("up of another size: exit %d, stderr %s", code, errOut)
	}
	return s
}

// checkServes opens a session on the cluster, makes a node and reads it.
func checkServes(t *testing.T, kind backends.Kind, endpoints []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := runner.NewBackend(kind, runner.Servers{Endpoints: endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := b.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ns := backends.Namespace("cluster-test")
	if err := sess.EnsurePath(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Create(ctx, ns+"/node", []byte("up")); err != nil {
		t.Fatal(err)
	}
	if data, _, err := sess.Get(ctx, ns+"/node"); err != nil || string(data) != "up" {
		t.Fatalf("read back %q, %v", data, err)
	}
	if err := b.(backends.Admin).DeleteTree(ctx, ns); err != nil {
		t.Fatal(err)
	}
}

func statusJSON(t *testing.T, bin, home string) saved.Report {
	t.Helper()
	out := mustCLI(t, bin, home, "cluster", "status", "--json")
	var rs []saved.Report
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(rs) != 1 {
		t.Fatalf("status --json: %d clusters, want 1:\n%s", len(rs), out)
	}
	return rs[0]
}

// checkStatusServing checks `status` on a healthy cluster.
func checkStatusServing(t *testing.T, bin, home string, s *saved.Cluster) {
	t.Helper()
	start := time.Now()
	r := statusJSON(t, bin, home)
	t.Logf("status --json took %v", time.Since(start).Round(time.Millisecond))
	if r.Health != "serving" || r.Backend != s.Backend || len(r.Members) != len(s.Members()) {
		t.Fatalf("status: %+v", r)
	}
	leaders := 0
	for i, m := range r.Members {
		want := s.Members()[i]
		if m.Endpoint != want.Endpoint || m.PID != want.PID || !m.Running || m.Version == "" || m.Error != "" {
			t.Errorf("member %d: %+v", i, m)
		}
		switch m.Role {
		case "leader", "standalone":
			leaders++
		case "follower":
		default:
			t.Errorf("member %d: role %q", i, m.Role)
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders in %+v", leaders, r.Members)
	}
	out := mustCLI(t, bin, home, "cluster", "status")
	for _, want := range append([]string{string(s.Backend) + ": serving", "--endpoints " + strings.Join(s.Endpoints, ",")}, s.Endpoints...) {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
}

// checkDown stops the cluster with `down` and checks that no member
// process is left and the files and state are gone; then that status and
// down say there is nothing.
func checkDown(t *testing.T, bin, home string, s *saved.Cluster) {
	t.Helper()
	start := time.Now()
	out := mustCLI(t, bin, home, "cluster", "down", "--backend", string(s.Backend))
	t.Logf("cluster down took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	for _, m := range s.Members() {
		if m.Runs() {
			t.Errorf("%s (pid %d) still runs after down", m.Name, m.PID)
		}
	}
	for _, p := range []string{s.Dir, statePath(s, home)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
	if out := mustCLI(t, bin, home, "cluster", "status"); !strings.Contains(out, "No cluster saved") {
		t.Errorf("status after down:\n%s", out)
	}
	if out := mustCLI(t, bin, home, "cluster", "down"); !strings.Contains(out, "No cluster to stop") {
		t.Errorf("down after down:\n%s", out)
	}
}

// A state file whose pid now belongs to another program must not get that
// program killed: down treats the state as stale and only removes files.
func TestClusterDownSparesReusedPID(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", home)
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = other.Process.Kill()
		_ = other.Wait()
	}()
	statePath, err := saved.DefaultPath(backends.ZooKeeper)
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSuffix(statePath, ".json")
	s := &saved.Cluster{Backend: backends.ZooKeeper, Nodes: 1, Dir: dir, Endpoints: []string{"127.0.0.1:1"}}
	s.ZooKeeper = stateWithMember(other.Process.Pid, dir)
	if err := os.MkdirAll(filepath.Join(dir, "node1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := saved.Write(statePath, s); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := zkbench(t, "cluster", "status")
	if err != nil || !strings.Contains(out, "stale") || !strings.Contains(out, "not running") {
		t.Errorf("status: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = zkbench(t, "cluster", "down", "--backend", "zookeeper")
	if err != nil || !strings.Contains(out, "stale state") {
		t.Errorf("down: %v\n%s%s", err, out, errOut)
	}
	if err := syscall.Kill(other.Process.Pid, 0); err != nil {
		t.Fatalf("down signalled an unrelated process with the saved pid: %v", err)
	}
	for _, p := range []string{dir, statePath} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
}

func TestClusterBadInput(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", home)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(corrupt, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "up"}, "--backend is required"},
		{[]string{"cluster", "up", "--backend", "consul"}, "want zookeeper or etcd"},
		{[]string{"cluster", "up", "--backend", "etcd", "--nodes", "2"}, "--nodes 2"},
		{[]string{"cluster", "up", "--backend", "zookeeper", "--dir", full}, "is not empty"},
		{[]string{"cluster", "down", "--backend", "zk"}, "want zookeeper or etcd"},
		{[]string{"cluster", "status", "--state", corrupt}, "not a zkbench cluster state file"},
		{[]string{"cluster", "down", "--state", corrupt}, "not a zkbench cluster state file"},
	} {
		_, _, err := zkbench(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to say %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(full, "keep")); err != nil {
		t.Errorf("refused --dir was changed: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(home, "zkbench"))
	if len(entries) != 0 {
		t.Errorf("bad input left files in the state folder: %v", entries)
	}
}

// stateWithMember is a one-member ZooKeeper state naming pid.
func stateWithMember(pid int, dir string) *zkcluster.State {
	node := filepath.Join(dir, "node1")
	return &zkcluster.State{Dir: dir, Members: []zkcluster.Member{{
		ID: 1, ClientPort: 1, PID: pid, Dir: node, DataDir: filepath.Join(node, "data"),
		ConfigPath: filepath.Join(node, "zoo.cfg"), LogPath: filepath.Join(node, "server.log"),
	}}}
}
