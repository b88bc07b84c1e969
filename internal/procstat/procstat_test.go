package procstat

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestSelfGrowsWithWork(t *testing.T) {
	before, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if before.RSSBytes < 1<<20 {
		t.Fatalf("RSS %d bytes: a Go test binary is bigger than 1 MiB", before.RSSBytes)
	}
	// Touch 64 MiB and burn 300 ms of CPU, as getrusage counts it: on a
	// loaded machine 300 ms of wall time may be far less CPU.
	// Mapped here and unmapped at the end, not taken from Go's heap: a heap
	// keeps the pages an earlier run (-count) freed, so its RSS need not grow.
	buf, err := syscall.Mmap(-1, 0, 64<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal("mmap:", err)
	}
	defer syscall.Munmap(buf)
	for i := range buf {
		buf[i] = byte(i)
	}
	x := 0
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := used()
	for deadline := time.Now().Add(time.Minute); used()-start < 300*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("not 300 ms of CPU in a minute (%v)", used()-start)
		}
		for i := 0; i < 1e5; i++ {
			x += i
		}
	}
	burnt := used() - start
	after, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in 10 ms ticks.
	if d := after.CPUSeconds - before.CPUSeconds; d < burnt.Seconds()-0.05 {
		t.Errorf("CPU grew by %.2fs after %v of work (getrusage)", d, burnt)
	}
	if after.RSSBytes < before.RSSBytes+32<<20 {
		t.Errorf("RSS grew from %d to %d after touching 64 MiB", before.RSSBytes, after.RSSBytes)
	}
	_ = buf[x%len(buf)]
}

func TestReadOtherProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal("sleep:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// A child in the middle of its exec counts no resident pages yet
	// (the forked child shares this process's memory; the new image has
	// not been touched): wait for its first.
	var st Stat
	for deadline := time.Now().Add(10 * time.Second); st.RSSBytes == 0; time.Sleep(5 * time.Millisecond) {
		var err error
		if st, err = Read(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a running sleep has no resident memory after 10 s")
		}
	}
	if _, err := Read(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Read(no such pid) = %v, want ErrNoProcess", err)
	}
}

// TestStartTicks: a child's start time is read while it runs, not once it
// has exited (first a zombie, then reaped), nor for a pid no process has.
func TestStartTicks(t *testing.T) {
	self, err := StartTicks(os.Getpid())
	if err != nil || self == 0 {
		t.Fatalf("StartTicks(self) = %d, %v", self, err)
	}
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	child, err := StartTicks(cmd.Process.Pid)
	if err != nil || child < self {
		t.Fatalf("StartTicks(child) = %d, %v: want at least this process's %d", child, err, self)
	}
	if again, err := StartTicks(cmd.Process.Pid); err != nil || again != child {
		t.Fatalf("StartTicks(child) again = %d, %v: want %d", again, err, child)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	waitFor("a killed child not yet reaped (a zombie): StartTicks does not say ErrNoProcess", func() bool {
		_, err := StartTicks(cmd.Process.Pid)
		return errors.Is(err, ErrNoProcess)
	})
	_ = cmd.Wait()
	if _, err := StartTicks(cmd.Process.Pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("StartTicks(reaped child) = %v, want ErrNoProcess", err)
	}
	if _, err := StartTicks(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("StartTicks(no such pid) = %v, want ErrNoProcess", err)
	}
}

func TestBootAndNamespace(t *testing.T) {
	boot, err := BootID()
	if err != nil || len(boot) != 36 {
		t.Errorf("BootID = %q, %v: want a UUID", boot, err)
	}
	ns, err := PIDNamespace()
	if _, perr := strconv.ParseUint(ns, 10, 64); err != nil || perr != nil {
		t.Errorf("PIDNamespace = %q, %v: want an inode number", ns, err)
	}
}

// TestAliveCmdlineMemTotal: a running child is alive with its arguments; once
// killed and before it is reaped (a zombie) it is not; the machine has memory.
func TestAliveCmdlineMemTotal(t *testing.T) {
	cmd := exec.Command("sleep", "30.5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		args, err := Cmdline(pid)
		if err == nil && slices.Equal(args, []string{"sleep", "30.5"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Cmdline(child) = %q, %v", args, err)
		}
	}
	if !Alive(pid) {
		t.Error("a running child is not alive")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); Alive(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a killed child not yet reaped is still alive")
		}
	}
	if _, err := Cmdline(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Cmdline(no such pid) = %v, want ErrNoProcess", err)
	}
	if m := MemTotal(); m < 64<<20 {
		t.Errorf("MemTotal = %d bytes", m)
	}
}

// A class histogram's last line holds the live bytes; one without it is an
// error, not a zero.
func TestParseClassHistogramTotal(t *testing.T) {
	out := []byte(`12345:
 num     #instances         #bytes  class name (module)
-------------------------------------------------------
   1:         20418        1542464  [B (java.base@17.0.21)
   2:          3390         409640  java.lang.Class (java.base@17.0.21)
Total         89123        5282472
`)
	n, err := parseClassHistogramTotal(out)
	if err != nil || n != 5282472 {
		t.Fatalf("parseClassHistogramTotal = %d, %v; want 5282472", n, err)
	}
	if _, err := parseClassHistogramTotal([]byte("12345:\ncom.sun.tools.attach.AttachNotSupportedException: Unable to open socket file\n")); err == nil {
		t.Fatal("no Total line: want an error")
	}
}
