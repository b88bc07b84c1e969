package spawn

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Terminate ends a child that obeys SIGTERM within the grace, and SIGKILLs
// one that ignores it once the grace is over; Adopt notices the exit of a
// process it did not start.
func TestProcTerminate(t *testing.T) {
	ready := readyFile(t)
	start := func(script string) *Proc {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "READY="+ready)
		if err := Start(cmd); err != nil {
			t.Fatal(err)
		}
		return Watch(cmd, nil)
	}
	obeys := start("exec sleep 60")
	adopted := Adopt(obeys.PID())
	if adopted == nil || !obeys.Running() || !adopted.Running() {
		t.Fatal("a fresh child is not running")
	}
	t0 := time.Now()
	obeys.Terminate(context.Background(), 10*time.Second)
	if obeys.Running() || time.Since(t0) > 5*time.Second {
		t.Fatalf("SIGTERM: running %v after %v", obeys.Running(), time.Since(t0))
	}
	t.Logf("SIGTERM obeyed: gone after %v", time.Since(t0).Round(time.Millisecond))
	select {
	case <-adopted.Exited():
	case <-time.After(2 * time.Second):
		t.Fatal("Adopt did not notice the exit within 2 s")
	}

	ignores := start(`trap '' TERM; touch "$READY"; while :; do sleep 0.05; done`)
	waitReady(t, ready)
	t0 = time.Now()
	ignores.Terminate(context.Background(), 300*time.Millisecond)
	if took := time.Since(t0); ignores.Running() || took < 300*time.Millisecond {
		t.Fatalf("SIGTERM ignored: running %v, returned after %v (grace 300ms)", ignores.Running(), took)
	} else {
		t.Logf("SIGTERM ignored: killed after %v (grace 300ms)", took.Round(time.Millisecond))
	}
	if Adopt(ignores.PID()) != nil {
		t.Fatal("Adopt of an exited process is not nil")
	}
}

// TestProcTerminateGroup: with WatchGroup, Terminate stops the child's own
// children too: a grandchild that obeys SIGTERM, one left behind by a
// child that exited by itself, and one that ignores SIGTERM (SIGKILLed
// once the grace is over). Plain Watch leaves a grandchild running, which
// is why exec needs the group.
func TestProcTerminateGroup(t *testing.T) {
	// start runs script as a group leader; the script prints its
	// grandchild's pid first.
	ready := readyFile(t)
	start := func(script string, group bool) (*Proc, int) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "READY="+ready)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := Start(cmd); err != nil {
			t.Fatal(err)
		}
		var line []byte
		buf := make([]byte, 1)
		for {
			if _, err := out.Read(buf); err != nil || buf[0] == '\n' {
				break
			}
			line = append(line, buf[0])
		}
		pid, err := strconv.Atoi(string(line))
		if err != nil {
			t.Fatalf("no grandchild pid: %q", line)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		if group {
			return WatchGroup(cmd, nil), pid
		}
		return Watch(cmd, nil), pid
	}
	gone := func(what string, pid int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for Alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: grandchild %d still alive 10s after Terminate returned", what, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	p, pid := start("sleep 60 & echo $!; exec sleep 60", true)
	if !Alive(pid) {
		t.Fatalf("grandchild %d not running", pid)
	}
	p.Terminate(context.Background(), 10*time.Second)
	gone("SIGTERM to the group", pid)

	p, pid = start("sleep 60 & echo $!; exit 3", true)
	<-p.Exited()
	if !Alive(pid) {
		t.Fatalf("the grandchild %d did not outlive its parent", pid)
	}
	p.Terminate(context.Background(), 10*time.Second)
	gone("a group whose leader had exited", pid)

	p, pid = start(`sh -c 'trap "" TERM; touch "$READY"; while :; do sleep 0.05; done' & echo $!; exec sleep 60`, true)
	waitReady(t, ready)
	t0 := time.Now()
	p.Terminate(context.Background(), 300*time.Millisecond)
	if took := time.Since(t0); took < 300*time.Millisecond {
		t.Fatalf("a grandchild ignores SIGTERM, yet Terminate returned after %v (grace 300ms)", took)
	}
	gone("a grandchild that ignores SIGTERM", pid)

	p, pid = start("sleep 60 & echo $!; exec sleep 60", false)
	p.Terminate(context.Background(), 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	if !Alive(pid) {
		t.Fatal("plain Watch: the grandchild was stopped too; WatchGroup is not needed, or the test is wrong")
	}
}

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	var lines []string
	for i := range 20 {
		lines = append(lines, "line "+strconv.Itoa(i))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := LogTail(path, 3), "line 17\nline 18\nline 19"; got != want {
		t.Fatalf("LogTail 3 = %q, want %q", got, want)
	}
	if got := LogTail(path, 50); got != strings.Join(lines, "\n") {
		t.Fatalf("LogTail 50 = %q", got)
	}
	if got := LogTail(filepath.Join(t.TempDir(), "none"), 3); !strings.HasPrefix(got, "(") {
		t.Fatalf("missing file: %q", got)
	}
}

// readyFile is a path a child script touches once it has set its trap.
func readyFile(t *testing.T) string {
	return filepath.Join(t.TempDir(), "ready")
}

// waitReady waits until path exists (the child set its trap; a fixed wait
// may end before a loaded machine runs the shell that far), then removes it
// for the next child.
func waitReady(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not set its trap within 10s (no %s)", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
