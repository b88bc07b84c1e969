package results

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/figures"
)

func writeTestRun(t testing.TB) *Run {
	t.Helper()
	rec := NewRecorder()
	for i := 1; i <= 1000; i++ {
		Record(rec, time.Duration(i)*time.Microsecond*10)
	}
	h, err := NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	return &Run{
		Format:    FormatVersion,
		ID:        "write-test",
		Status:    StatusComplete,
		StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Config:    Config{Workload: "lock", Backend: "etcd", Variants: []string{"naive", "fair"}, Clients: []int{10}, Repeat: 1},
		Results: []Result{
			{
				Workload: "lock", Variant: "naive", Backend: "etcd", Clients: 10, StoppedBy: "duration",
				Elapsed:    2 * time.Second,
				Ops:        Ops{Issued: 1010, Succeeded: 1000, Failed: 1, StillWaiting: 9},
				Throughput: 500,
				Latency:    map[figures.Latency]*Histogram{"acquire": h},
				PerOp:      map[string]float64{"watch_events": 9.02, "server_watch_events": 9.01, "wasted_wakeups": 8.1},
				Fairness:   Fairness{FIFOInversions: 12, Jain: 0.97},
				Safety:     Safety{Checked: 1000},
				Errors:     map[string]int64{"session_lost": 1},
				Series:     Series{Interval: 100 * time.Millisecond, Counts: []int64{50, 50}},
				Notes:      []string{"client and server disagree"},
			},
			{
				Workload: "lock", Variant: "native", Backend: "etcd", Clients: 10, StoppedBy: "ops",
				Elapsed: time.Second, Ops: Ops{Issued: 5, Succeeded: 5}, Throughput: 5,
				PerOp:  map[string]float64{"server_watch_events": 1},
				Safety: Safety{Checked: 5},
			},
		},
		Leftovers: []string{"/zkbench/write-test/c1/lock/x"},
	}
}

func TestWriteFileRoundTrip(t *testing.T) {
	want := writeTestRun(t)
	path := filepath.Join(t.TempDir(), "sub", "run.json")
	if err := CheckWritable(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("read back an invalid run: %v", err)
	}
	if got.ID != want.ID || len(got.Results) != 2 || got.Results[0].Ops != want.Results[0].Ops ||
		got.Results[0].PerOp["wasted_wakeups"] != 8.1 || !got.StartedAt.Equal(want.StartedAt) {
		t.Fatalf("round trip changed the run: %+v", got)
	}
	p50, err := got.Results[0].Latency["acquire"].Quantile(50)
	if err != nil {
		t.Fatal(err)
	}
	if p50 < 4900*time.Microsecond || p50 > 5100*time.Microsecond {
		t.Fatalf("p50 after round trip = %v, want about 5ms", p50)
	}
	// No temporary file is left next to the result.
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("folder holds %d entries, want only run.json", len(entries))
	}
	// Overwriting keeps the file valid.
	want.Status = StatusInterrupted
	if err := WriteFile(path, want); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(path); err != nil || got.Status != StatusInterrupted {
		t.Fatalf("after overwrite: %v, %v", got, err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *Run)
		want   string
	}{
		{"ops do not add up", func(r *Run) { r.Results[0].Ops.Unknown = 3 }, "ops issued 1010 != succeeded 1000 + failed 1 + unknown 3 + still waiting 9"},
		{"no format", func(r *Run) { r.Format = 0 }, "format 0"},
		{"newer format", func(r *Run) { r.Format = FormatVersion + 1 }, "format"},
		{"unknown status", func(r *Run) { r.Status = "done" }, `status "done"`},
		{"no id", func(r *Run) { r.ID = "" }, "run id is empty"},
		{"stopped by", func(r *Run) { r.Results[1].StoppedBy = "" }, "stopped_by"},
		{"NaN per op", func(r *Run) { r.Results[0].PerOp["x"] = math.NaN() }, `per-op figure "x"`},
		{"Inf throughput", func(r *Run) { r.Results[0].Throughput = math.Inf(1) }, "throughput"},
		{"no clients", func(r *Run) { r.Results[0].Clients = 0 }, "clients must be at least 1"},
		{"negative", func(r *Run) { r.Results[1].Ops = Ops{Issued: -1, Failed: -1} }, "negative operation count"},
		{"null histogram", func(r *Run) { r.Results[0].Latency["handoff"] = nil }, `latency "handoff" is null`},
		{"stale above writes", func(r *Run) {
			r.Results[0].Safety.Fence = &Fence{Fenced: true, Writes: 2, Stale: 3, Rejected: 1}
			r.Results[0].Safety.Prevented = 1
		}, "rejected <= stale <= writes"},
		{"fence and prevented disagree", func(r *Run) {
			r.Results[0].Safety.Fence = &Fence{Fenced: true, Writes: 20, Stale: 3, Rejected: 2}
		}, "but safety says 0 prevented"},
		{"unfenced rejects", func(r *Run) {
			r.Results[0].Safety.Fence = &Fence{Writes: 20, Stale: 3, Rejected: 2}
			r.Results[0].Safety.Prevented = 2
		}, "unfenced register rejected"},
		{"work recovered above committed", func(r *Run) {
			r.Results[0].Work = &Work{Steps: 3, Committed: 1, Recovered: 2}
		}, "0 <= recovered <= committed"},
		{"negative work anomaly", func(r *Run) {
			r.Results[0].Work = &Work{Steps: 3, Anomalies: WorkAnomalies{LostUpdates: -1}}
		}, "negative work anomalies"},
		{"crash ended nowhere", func(r *Run) {
			r.Results[0].Work = &Work{Steps: 3, Crashes: []Crash{{Client: 2, Ended: "vanished"}}}
		}, `crash of client 2 ended "vanished"`},
	}
	if err := writeTestRun(t).Validate(); err != nil {
		t.Fatalf("valid run rejected: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := writeTestRun(t)
			tc.change(r)
			err := r.Validate()
			if !errors.Is(err, ErrInvalidRun) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidRun mentioning %q", err, tc.want)
			}
			path := filepath.Join(t.TempDir(), "run.json")
			if err := WriteFile(path, r); !errors.Is(err, ErrInvalidRun) {
				t.Fatalf("WriteFile of an invalid run = %v", err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("an invalid run was written: %v", err)
			}
		})
	}
}

func TestUnwritableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can write anywhere")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	err := CheckWritable(dir)
	if !errors.Is(err, ErrUnwritable) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("CheckWritable(read-only) = %v", err)
	}
	err = CheckWritable(filepath.Join(dir, "below"))
	if !errors.Is(err, ErrUnwritable) {
		t.Fatalf("CheckWritable(below read-only) = %v", err)
	}
	err = WriteFile(filepath.Join(dir, "run.json"), writeTestRun(t))
	if !errors.Is(err, ErrUnwritable) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("WriteFile(read-only) = %v", err)
	}
}

func TestUnwritableIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(file); !errors.Is(err, ErrUnwritable) {
		t.Fatalf("CheckWritable(a file) = %v", err)
	}
	below := filepath.Join(file, "below")
	if err := CheckWritable(below); !errors.Is(err, ErrUnwritable) || !strings.Contains(err.Error(), below) || !strings.Contains(err.Error(), "pick another folder with -o") {
		t.Fatalf("CheckWritable(below a file) = %v", err)
	}
	if err := WriteFile(filepath.Join(below, "run.json"), writeTestRun(t)); !errors.Is(err, ErrUnwritable) {
		t.Fatalf("WriteFile(below a file) = %v", err)
	}
}

// TestWriteRunDir: a run lands in <output>/<run-id>/results.json, and an
// output that cannot be a folder is refused naming -o.
func TestWriteRunDir(t *testing.T) {
	run := writeTestRun(t)
	out := t.TempDir()
	dir, path, err := WriteRunDir(out, run)
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(out, run.ID) || path != filepath.Join(dir, FileName) {
		t.Errorf("wrote %s in %s", path, dir)
	}
	if back, err := ReadFile(path); err != nil || back.ID != run.ID {
		t.Errorf("read back: %v", err)
	}
	file := filepath.Join(out, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := WriteRunDir(file, run); err == nil || !strings.HasPrefix(err.Error(), "-o "+file) {
		t.Errorf("output under a file: %v", err)
	}
}
