package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testcluster"
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

// TestExecCommand runs zkbench exec as a process on etcd: PROGRAM's
// output passes through, a change restarts it, an expired session (the
// lease revoked on the server) stops it and exits non-zero with a message;
// a second exec stops on SIGINT with exit 0.
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
			node, file, "sh", "-c", `echo "got $(cat `+file+`)"; exec sleep 1000`)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		exited := make(chan struct{})
		go func() { done <- cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		return cmd, out, done
	}

	_, out, done := start()
	waitFor(t, "start", out, "got alpha")
	if _, err := cli.Put(ctx, node, "beta"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restart on a change", out, "got beta")
	leases, err := cli.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Leases {
		_, _ = cli.Revoke(ctx, l.ID) // this test binary's etcd; exec's is among them
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
	case <-time.After(30 * time.Second):
		t.Fatalf("exec still running after its lease was revoked:\n%s", out)
	}

	cmd, out, done := start()
	waitFor(t, "start", out, "got beta")
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exec after Ctrl-C: %v, want exit 0\n%s", err, out)
		}
		if !strings.Contains(out.String(), "stopping sh") {
			t.Fatalf("Ctrl-C did not stop PROGRAM first:\n%s", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("exec still running after SIGINT:\n%s", out)
	}
}
