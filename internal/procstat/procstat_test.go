package procstat

import (
	"errors"
	"os/exec"
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
	// Burn about 300 ms of CPU and touch 64 MiB.
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	x := 0
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		for i := 0; i < 1e5; i++ {
			x += i
		}
	}
	after, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if d := after.CPUSeconds - before.CPUSeconds; d < 0.1 {
		t.Errorf("CPU grew by %.2fs after 300ms of work", d)
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
