package members

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var errNoMember = errors.New("test: no such member")

// sleepers is two members that each run sleep, with their PIDs in pids.
func sleepers(t *testing.T) (*Procs, []int, string) {
	t.Helper()
	dir := t.TempDir()
	var mu sync.Mutex
	pids := make([]int, 2)
	s := New(&mu, 2, Spec{
		Pkg: "test", ErrNoMember: errNoMember,
		Command: func(i int) (*exec.Cmd, string, string) {
			return exec.Command("sleep", "60"), filepath.Join(dir, "m.log"), "member " + string(rune('a'+i))
		},
		SetPID: func(i, pid int) { pids[i] = pid },
	})
	t.Cleanup(s.KillAll)
	return s, pids, dir
}

// TestProcsLifecycle: members start (a header in their log, their PID
// recorded), are signalled, killed, restarted and stopped, and their PIDs
// follow; an index out of range is ErrNoMember.
func TestProcsLifecycle(t *testing.T) {
	s, pids, dir := sleepers(t)
	for i := range s.Len() {
		if err := s.Start(i); err != nil {
			t.Fatal(err)
		}
	}
	first := pids[0]
	if first == 0 || pids[1] == 0 {
		t.Fatalf("pids %v after Start", pids)
	}
	if err := s.Start(0); err != nil || pids[0] != first {
		t.Fatalf("Start of a running member: %v, pid %d, want %d", err, pids[0], first)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "m.log"))
	if !strings.Contains(string(log), "=== zkbench: starting member a at ") {
		t.Errorf("log %q: no header", log)
	}
	if _, err := s.Signal(0, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(0); err != nil || pids[0] != 0 {
		t.Fatalf("Kill: %v, pid %d", err, pids[0])
	}
	if _, err := s.Signal(0, syscall.SIGCONT); err == nil || err.Error() != "test: member 0 is not running" {
		t.Errorf("Signal of a stopped member: %v", err)
	}
	if err := s.Restart(t.Context(), 1, time.Second); err != nil || pids[1] == 0 {
		t.Fatalf("Restart: %v, pid %d", err, pids[1])
	}
	s.StopAll(t.Context(), time.Second, 1)
	if pids[0] != 0 || pids[1] != 0 {
		t.Errorf("pids %v after StopAll", pids)
	}
	if _, err := s.Proc(2); !errors.Is(err, errNoMember) {
		t.Errorf("Proc(2) = %v, want errNoMember", err)
	}
	if err := s.Kill(-1); !errors.Is(err, errNoMember) {
		t.Errorf("Kill(-1) = %v, want errNoMember", err)
	}
}

type member struct {
	addr string
	pid  int
}

func (m member) Endpoint() string { return m.addr }

// TestEndpointsAndPIDs: every member has an endpoint; only a running one
// (pid not 0) has a PID.
func TestEndpointsAndPIDs(t *testing.T) {
	ms := []member{{"a:1", 10}, {"b:2", 0}, {"c:3", 30}}
	if got := Endpoints(ms); !slices.Equal(got, []string{"a:1", "b:2", "c:3"}) {
		t.Errorf("Endpoints = %v", got)
	}
	got := PIDs(ms, func(m member) int { return m.pid })
	if want := map[string]int{"a:1": 10, "c:3": 30}; !maps.Equal(got, want) {
		t.Errorf("PIDs = %v, want %v", got, want)
	}
	if got := All(3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("All(3) = %v", got)
	}
}
