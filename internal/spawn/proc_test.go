package spawn

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Terminate ends a child that obeys SIGTERM within the grace, and SIGKILLs
// one that ignores it once the grace is over; Adopt notices the exit of a
// process it did not start.
func TestProcTerminate(t *testing.T) {
	start := func(script string) *Proc {
		cmd := exec.Command("sh", "-c", script)
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
	select {
	case <-adopted.Exited():
	case <-time.After(2 * time.Second):
		t.Fatal("Adopt did not notice the exit within 2 s")
	}

	ignores := start("trap '' TERM; while :; do sleep 0.05; done")
	time.Sleep(200 * time.Millisecond) // let the trap be set
	t0 = time.Now()
	ignores.Terminate(context.Background(), 300*time.Millisecond)
	if took := time.Since(t0); ignores.Running() || took < 300*time.Millisecond {
		t.Fatalf("SIGTERM ignored: running %v, returned after %v (grace 300ms)", ignores.Running(), took)
	}
	if Adopt(ignores.PID()) != nil {
		t.Fatal("Adopt of an exited process is not nil")
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
