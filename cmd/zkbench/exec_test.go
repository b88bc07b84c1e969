package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/spawn"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// lockedBuf collects a child's output.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, what string, out *lockedBuf, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q in the output:\n%s", what, want, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitChildren waits until PROGRAM has named n children ("child PID").
func waitChildren(t *testing.T, what string, out *lockedBuf, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	named := regexp.MustCompile(`child \d+`)
	for len(named.FindAllString(out.String(), -1)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: PROGRAM named fewer than %d children:\n%s", what, n, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childrenGone checks that the children PROGRAM started ("child PID" in
// its output) are gone once exec has ended.
func childrenGone(t *testing.T, what string, out *lockedBuf) {
	t.Helper()
	pids := regexp.MustCompile(`child (\d+)`).FindAllStringSubmatch(out.String(), -1)
	if len(pids) == 0 {
		t.Fatalf("%s: PROGRAM named no child:\n%s", what, out)
	}
	for _, m := range pids {
		pid, _ := strconv.Atoi(m[1])
		deadline := time.Now().Add(20 * time.Second)
		for spawn.Alive(pid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("%s: PROGRAM's child %d outlived exec", what, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestExecCommand runs zkbench exec as a process on etcd: PROGRAM's
// output passes through, a change restarts it, an expired session (its
// lease revoked on the server) stops it and exits non-zero with a message;
// a second exec stops on SIGINT with exit 0. PROGRAM is the help's shape
// (a shell with a sleep of its own), and its sleeps end with exec.
func TestExecCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eps := testcluster.EtcdEndpoints(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	node := backends.Namespace("exec-cmd-test") + "/config"
	defer cli.Delete(context.Background(), node)
	file := filepath.Join(t.TempDir(), "config")
	if _, err := cli.Put(ctx, node, "alpha"); err != nil {
		t.Fatal(err)
	}
	start := func() (*exec.Cmd, *lockedBuf, <-chan error) {
		out := &lockedBuf{}
		cmd := child(t, "", "exec", "--backend", "etcd", "--endpoints", etcdHostPort(t), "--grace", "2s",
			node, file, "sh", "-c", `echo "got $(cat `+file+`)"; sleep 1000 & echo "child $!"; wait`)
		cmd.Stdout, cmd.Stderr = out, out
		// A PROGRAM's child that outlives a failed test holds the output
		// pipe: Wait gives up on it after WaitDelay instead of waiting
		// for its sleep to end, and the cleanup kills the children named.
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		exited := make(chan struct{})
		go func() { done <- cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			for _, m := range regexp.MustCompile(`child (\d+)`).FindAllStringSubmatch(out.String(), -1) {
				if pid, err := strconv.Atoi(m[1]); err == nil && spawn.Alive(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		return cmd, out, done
	}

	_, out, done := start()
	waitFor(t, "start", out, "got alpha")
	// The first PROGRAM names its child after printing the data; a change
	// before that would stop it unnamed (seen beside two busy loops).
	waitChildren(t, "start", out, 1)
	if _, err := cli.Put(ctx, node, "beta"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restart on a change", out, "got beta")
	// The shell names its child after it printed the data: wait for that
	// too, before anything stops the program (childrenGone reads it).
	waitChildren(t, "restart on a change", out, 2)
	// exec's own lease, named by its log line: the other tests' sessions
	// on this shared etcd keep theirs.
	m := regexp.MustCompile(`zkbench exec: etcd session (0x[0-9a-f]+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("exec did not log its session:\n%s", out)
	}
	lease, err := strconv.ParseInt(m[1], 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(lease)); err != nil {
		t.Fatalf("revoke exec's lease %s: %v", m[1], err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("exec after expiry: %v, want a non-zero exit\n%s", err, out)
		}
		if !strings.Contains(out.String(), "session expired") {
			t.Fatalf("no message saying the session expired:\n%s", out)
		}
		childrenGone(t, "after an expiry", out)
	case <-time.After(30 * time.Second):
		t.Fatalf("exec still running after its lease was revoked:\n%s", out)
	}

	cmd, out, done := start()
	waitFor(t, "start", out, "got beta")
	waitChildren(t, "start", out, 1)
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exec after Ctrl-C: %v, want exit 0\n%s", err, out)
		}
		if !strings.Contains(out.String(), "stopping sh") {
			t.Fatalf("Ctrl-C did not stop PROGRAM first:\n%s", out)
		}
		childrenGone(t, "after Ctrl-C", out)
	case <-time.After(30 * time.Second):
		t.Fatalf("exec still running after SIGINT:\n%s", out)
	}
}
