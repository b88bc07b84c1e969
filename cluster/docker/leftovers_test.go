package docker_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// ownerChildEnv makes the test binary an owner that TestRemoveLeftovers
// kills: it starts a 1-member cluster, prints its name, and waits for its
// stdin to close.
const ownerChildEnv = "ZKBENCH_TEST_OWNER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(ownerChildEnv) == "1" {
		os.Exit(ownerChild())
	}
	os.Exit(m.Run())
}

// ownerChild runs in the child process. Should its parent die without
// killing it, its stdin closes and it stops its cluster itself.
func ownerChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := dockercluster.Start(ctx, dockercluster.Options{Kind: backends.Etcd, UnsafeNoFsync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("cluster %s\n", c.Name())
	_, _ = io.Copy(io.Discard, os.Stdin)
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	_ = c.Stop(sctx)
	return 0
}

// TestRemoveLeftovers starts a cluster in a child process and SIGKILLs the
// child: its container and network stay. Beside it runs a cluster of this
// process, whose owner lives. RemoveLeftovers (over these two clusters
// only: the engine is shared) lists the dead child's with --dry-run and
// removes nothing, then removes it, saying whose it was, and leaves this
// process's cluster serving.
func TestRemoveLeftovers(t *testing.T) {
	testcluster.RequireDocker(t, backends.Etcd)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), ownerChildEnv+"=1")
	var stderr bytes.Buffer
	child.Stderr = &stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := child.Process.Pid
	var name string
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = child.Process.Kill()
		_ = child.Wait()
		if name == "" {
			return
		}
		// Whatever failed, the child's cluster goes: its owner is dead.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := dockercluster.RemoveLeftoversOf(ctx, io.Discard, false, name); err != nil {
			t.Errorf("clean-up: %v", err)
		}
		if l := leftovers(t, name); len(l) > 0 {
			t.Errorf("left behind: %v", l)
		}
	})
	names := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if n, ok := strings.CutPrefix(s.Text(), "cluster "); ok {
				names <- n
			}
		}
		close(names)
	}()
	select {
	case n, ok := <-names:
		if !ok {
			_ = child.Wait()
			t.Fatalf("the child started no cluster:\n%s", stderr.String())
		}
		name = n
	case <-time.After(2 * time.Minute):
		t.Fatalf("the child started no cluster in 2 min:\n%s", stderr.String())
	}

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err == nil {
		t.Fatal("the child exited cleanly after SIGKILL")
	}
	if l := leftovers(t, name); len(l) != 2 {
		t.Fatalf("after the child's SIGKILL its cluster holds %v: want its container and network", l)
	}

	own := start(t, backends.Etcd, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	found, err := dockercluster.RemoveLeftoversOf(ctx, &out, true, name, own.Name())
	if err != nil || len(found) != 1 || found[0].Name != name {
		t.Fatalf("dry run found %+v, %v: want only %s", found, err, name)
	}
	if !strings.Contains(out.String(), "would remove docker cluster "+name) || len(leftovers(t, name)) != 2 {
		t.Fatalf("dry run wrote %q and left %v: want it listed and kept", out.String(), leftovers(t, name))
	}

	out.Reset()
	found, err = dockercluster.RemoveLeftoversOf(ctx, &out, false, name, own.Name())
	if err != nil || len(found) != 1 {
		t.Fatalf("removal found %+v, %v", found, err)
	}
	t.Logf("%s", strings.TrimSpace(out.String()))
	want := fmt.Sprintf("removed docker cluster %s left by process %d (no longer running): 1 container, 1 network\n", name, pid)
	if out.String() != want {
		t.Errorf("removal wrote %q: want %q", out.String(), want)
	}
	if l := leftovers(t, name); len(l) > 0 {
		t.Errorf("the dead child's cluster still holds %v", l)
	}
	if l := leftovers(t, own.Name()); len(l) != 2 {
		t.Errorf("this process's cluster holds %v: want its container and network, untouched", l)
	}
	if l, err := own.Leader(ctx); err != nil || l != 0 {
		t.Errorf("this process's cluster after the removal: leader %d, %v: want it serving", l, err)
	}
}

// TestRemoveLeftoversNoEngine: where the engine's socket does not exist,
// RemoveLeftovers says ErrNoEngine at once, asking no engine, and writes
// nothing. Its error tells the two apart, whatever the machine's load: the
// missing socket is named only when the address was found absent before
// any probe (an unanswered probe would report its own error after up to
// 3 s).
func TestRemoveLeftoversNoEngine(t *testing.T) {
	sock := t.TempDir() + "/docker.sock"
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	var out bytes.Buffer
	_, err := dockercluster.RemoveLeftovers(context.Background(), &out, false)
	if !errors.Is(err, dockercluster.ErrNoEngine) || out.Len() > 0 {
		t.Errorf("RemoveLeftovers without an engine: %v, wrote %q: want ErrNoEngine and nothing", err, out.String())
	}
	if err == nil || !strings.Contains(err.Error(), "no socket at "+sock) {
		t.Errorf("RemoveLeftovers without a socket: %v: want it to name the missing socket %s, found before asking any engine", err, sock)
	}
}
