package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// configRun is a zkbench config run with one persistent etcd case at
// clients, whose propagate histogram holds the given latencies.
func configRun(t *testing.T, clients int, rate float64, size string, propagate ...time.Duration) *results.Run {
	t.Helper()
	rec := results.NewRecorder()
	for _, d := range propagate {
		results.Record(rec, d)
	}
	h, err := results.NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	return &results.Run{
		Config: results.Config{Workload: "config", Backend: backends.Etcd, Rate: rate, Params: map[string]string{"size": size}},
		Results: []results.Result{{
			Workload: "config", Variant: "persistent", Backend: backends.Etcd, Clients: clients,
			Latency: map[figures.Latency]*results.Histogram{figures.LatencyPropagate: h},
		}},
	}
}

func TestCompare(t *testing.T) {
	tools := map[string]*ToolRun{"testdata/watch-latency-10-conns.txt": parseFile(t, "watch-latency-10-conns.txt")}
	// The tool's watch p99 in that file is 1.626174 ms; zkbench's p99 here
	// is 1.9 ms (every value the same, so every percentile is it).
	var lat []time.Duration
	for range 100 {
		lat = append(lat, 1900*time.Microsecond)
	}
	run := configRun(t, 10, 20, "1024", lat...)
	rows, warnings, err := Compare(tools, run, []figures.Latency{figures.LatencyPropagate, "propagate_start"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %v, want none (same rate and size)", warnings)
	}
	if len(rows) != 2 {
		t.Fatalf("rows = %+v, want one per latency name", rows)
	}
	got := rows[0]
	if got.Watchers != 10 || got.Layout != "10 conns, 10 streams" || got.Latency != figures.LatencyPropagate || got.Missing {
		t.Errorf("row = %+v", got)
	}
	if got.ToolP99 != 1626174*time.Nanosecond || got.ToolP50 != 0 || got.ToolPut != -1 {
		t.Errorf("tool figures = p50 %v, p99 %v, put p99 %v; want 0, 1.626174ms, -1 (20 puts: no p99)", got.ToolP50, got.ToolP99, got.ToolPut)
	}
	// hdrhistogram keeps 3 significant digits: 1.9 ms reads back within 0.1%.
	if want := 1.9 / 1.626174; math.Abs(got.Ratio-want) > 0.002 {
		t.Errorf("ratio = %v, want %v", got.Ratio, want)
	}
	if got.Within(1.2) != "yes" {
		t.Errorf("Within(1.2) = %q, want yes at %.3f", got.Within(1.2), got.Ratio)
	}
	if !rows[1].Missing || rows[1].Latency != "propagate_start" || !math.IsNaN(rows[1].Ratio) || rows[1].Within(1.2) != "-" {
		t.Errorf("row of a latency the run did not record = %+v, want Missing with no ratio", rows[1])
	}
	var out bytes.Buffer
	if err := WriteTable(&out, rows, 1.2); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10 conns, 10 streams", "1.63 ms", "1.90 ms", "1.17", "absent", "within 1.2x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCompareRefuses(t *testing.T) {
	tools := map[string]*ToolRun{"a.txt": parseFile(t, "watch-latency-10-conns.txt")}
	if _, _, err := Compare(tools, configRun(t, 100, 20, "1024", time.Millisecond), []figures.Latency{figures.LatencyPropagate}); err == nil || !strings.Contains(err.Error(), "no persistent etcd case at 10 clients") {
		t.Errorf("no case at the tool's watcher count: err = %v", err)
	}
	_, warnings, err := Compare(tools, configRun(t, 10, 2, "64KB", time.Millisecond), []figures.Latency{figures.LatencyPropagate})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "put 20 a second, zkbench's writer 2") || !strings.Contains(warnings[1], "1024 bytes, zkbench's config 64KB") {
		t.Errorf("warnings = %q, want the rate and the size named", warnings)
	}
	lock := configRun(t, 10, 20, "1024", time.Millisecond)
	lock.Config.Workload = "lock"
	if _, _, err := Compare(tools, lock, []figures.Latency{figures.LatencyPropagate}); err == nil {
		t.Error("a lock run compared without error")
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		ratio float64
		want  string
	}{
		{1, "yes"}, {1.2, "yes"}, {1 / 1.2, "yes"}, {1.21, "no (zkbench slower)"}, {0.8, "no (zkbench faster)"}, {math.NaN(), "-"},
	} {
		if got := (Row{Ratio: tc.ratio}).Within(1.2); got != tc.want {
			t.Errorf("Within(1.2) at %v = %q, want %q", tc.ratio, got, tc.want)
		}
	}
}
