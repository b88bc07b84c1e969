package procstat

import (
	"errors"
	"os/exec"
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
	buf := make([]byte, 64<<20)
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
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	defer cmd.Process.Kill()
	st, err := Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.RSSBytes == 0 {
		t.Error("a running sleep has no resident memory")
	}
	if _, err := Read(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Read(no such pid) = %v, want ErrNoProcess", err)
	}
}

func TestParseCPUWithOddName(t *testing.T) {
	// The command name holds ") (" and spaces; fields count from the last ')'.
	stat := "42 (a) (b c) S 1 1 1 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 100 0 0"
	got, err := parseCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3.0 {
		t.Errorf("parseCPU = %v, want 3.0 (250+50 ticks)", got)
	}
}
