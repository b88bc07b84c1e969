package procstat

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMachineTellsOwnFromOthers: a busy loop below this process counts as
// its own, one outside its tree (a grandchild its parent left to init) as
// another process's load, and a child that ran and was reaped in between
// counts through this process's reaped time.
func TestMachineTellsOwnFromOthers(t *testing.T) {
	root := os.Getpid()
	before, err := ReadMachine(root)
	if err != nil {
		t.Fatal(err)
	}
	if before.Cores < 1 || before.Busy <= 0 || len(before.Own) == 0 || len(before.Kernel) == 0 {
		t.Fatalf("reading: %d cores, busy %.2fs, %d own, %d kernel threads", before.Cores, before.Busy, len(before.Own), len(before.Kernel))
	}

	inside := exec.Command("sh", "-c", "while :; do :; done")
	if err := inside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { inside.Process.Kill(); inside.Wait() }()
	out, err := exec.Command("sh", "-c", "sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	outside, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("outside loop's pid %q: %v", out, err)
	}
	defer syscall.Kill(outside, syscall.SIGKILL)

	// A child that runs and is reaped in between.
	reaped := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	reapedCPU := (reaped.ProcessState.UserTime() + reaped.ProcessState.SystemTime()).Seconds()

	// Wait for a third of a CPU second in each loop, however loaded the
	// machine is.
	cpu := func(pid int) float64 {
		st, err := Read(pid)
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		return st.CPUSeconds
	}
	for deadline := time.Now().Add(2 * time.Minute); cpu(inside.Process.Pid) < 0.34 || cpu(outside) < 0.34; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the loops ran %.2fs and %.2fs in two minutes", cpu(inside.Process.Pid), cpu(outside))
		}
	}
	// The loops' CPU read before the machine's: they run on, so the
	// machine's reading holds at least what theirs did.
	in, outCPU := cpu(inside.Process.Pid), cpu(outside)
	after, err := ReadMachine(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.Own[inside.Process.Pid]; !ok {
		t.Errorf("the child loop %d is not among the own processes", inside.Process.Pid)
	}
	if _, ok := after.Own[outside]; ok {
		t.Errorf("the loop outside the tree (%d) is among the own processes", outside)
	}
	u := after.Since(before)
	// /proc counts in 10 ms ticks, per process and per CPU.
	if want := in + reapedCPU - 0.05; u.Own < want {
		t.Errorf("own %.2fs: want at least the child loop's %.2fs and the reaped child's %.2fs", u.Own, in, reapedCPU)
	}
	if want := outCPU - 0.05; u.Others() < want {
		t.Errorf("others %.2fs (busy %.2f, own %.2f, kernel %.2f): want at least the outside loop's %.2fs", u.Others(), u.Busy, u.Own, u.Kernel, outCPU)
	}
	if u.Busy < u.Own {
		t.Errorf("busy %.2fs is less than own %.2fs", u.Busy, u.Own)
	}
}

// TestRoot: the root is this process unless RootEnv names an ancestor.
func TestRoot(t *testing.T) {
	t.Setenv(RootEnv, "")
	if got := Root(); got != os.Getpid() {
		t.Errorf("Root() without %s = %d, want this process %d", RootEnv, got, os.Getpid())
	}
	t.Setenv(RootEnv, strconv.Itoa(os.Getppid()))
	if got := Root(); got != os.Getppid() {
		t.Errorf("Root() with the parent in %s = %d, want the parent %d", RootEnv, got, os.Getppid())
	}
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	t.Setenv(RootEnv, strconv.Itoa(other.Process.Pid))
	if got := Root(); got != os.Getpid() {
		t.Errorf("Root() with a non-ancestor in %s = %d, want this process %d", RootEnv, got, os.Getpid())
	}
}

// TestMachineTellsTheEngineApart: a process outside zkbench's tree named
// as one of the container engine's (here a copy of sleep called
// docker-proxy) is read as the engine's, not as another process's.
func TestMachineTellsTheEngineApart(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir() + "/docker-proxy"
	if err := os.WriteFile(proxy, data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", proxy+" 60 </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := ReadMachine(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		_, engine := m.Engine[pid]
		_, rest := m.Rest[pid]
		_, own := m.Own[pid]
		if engine && !rest && !own {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d (docker-proxy): engine %v, rest %v, own %v; want the engine's only", pid, engine, rest, own)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
