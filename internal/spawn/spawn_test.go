package spawn

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChildDiesWithParent starts this test binary as a helper parent that
// spawns "sleep 60" and prints its pid; killing the helper must kill sleep.
func TestChildDiesWithParent(t *testing.T) {
	if os.Getenv("SPAWN_HELPER") == "1" {
		cmd := exec.Command("sleep", "60")
		if err := Start(cmd); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$")
	helper.Env = append(os.Environ(), "SPAWN_HELPER=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("helper said %q", buf[:n])
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("child %d not running: %v", pid, err)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		// The child is reparented and reaped by init (or left a zombie in a
		// container without one): Alive checks its state.
		if !Alive(pid) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d still alive 5s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
