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

func histogram(t *testing.T, lat ...time.Duration) *results.Histogram {
	t.Helper()
	rec := results.NewRecorder()
	for _, d := range lat {
		results.Record(rec, d)
	}
	h, err := results.NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// configRun is a zkbench config run with one persistent etcd case at
// clients: 40 reloads 1.9 ms after the writer's reply (4.9 ms after its
// start) and 60 that beat the reply (2.5 ms after the start).
func configRun(t *testing.T, clients int, rate float64, size string) *results.Run {
	t.Helper()
	start := append(repeat(4900*time.Microsecond, 40), repeat(2500*time.Microsecond, 60)...)
	return &results.Run{
		Config: results.Config{Workload: "config", Backend: backends.Etcd, Rate: rate, Params: map[string]string{"size": size}},
		Results: []results.Result{{
			Workload: "config", Variant: "persistent", Backend: backends.Etcd, Clients: clients, Throughput: rate,
			Latency: map[figures.Latency]*results.Histogram{
				figures.LatencyPropagateStart: histogram(t, start...),
				figures.LatencyPropagate:      histogram(t, repeat(1900*time.Microsecond, 40)...),
			},
		}},
	}
}

func TestCompare(t *testing.T) {
	tools := map[string]*ToolRun{"testdata/watch-latency-10-conns.txt": parseFile(t, "watch-latency-10-conns.txt")}
	run := configRun(t, 10, 20, "1024")
	rows, warnings, err := Compare(tools, run, []string{"propagate_start", "propagate", ToolDefinition, "propagate_elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %v, want none (same rate and size)", warnings)
	}
	if len(rows) != 4 {
		t.Fatalf("rows = %+v, want one per view", rows)
	}
	for _, r := range rows {
		if r.Watchers != 10 || r.Layout != "10 conns, 10 streams" {
			t.Errorf("row = %+v, want 10 watchers on 10 conns", r)
		}
		// The tool's watch p99 in that file is 1.626174 ms; its p50 is 0
		// (most events beat the put's reply); 20 puts have no p99.
		if r.ToolP99 != 1626174*time.Nanosecond || r.ToolP50 != 0 || r.ToolPut != -1 {
			t.Errorf("tool figures = p50 %v, p99 %v, put p99 %v; want 0, 1.626174ms, -1", r.ToolP50, r.ToolP99, r.ToolPut)
		}
	}
	// hdrhistogram keeps 3 significant digits: values read back within 0.1%.
	// A want of 0 is the histogram's floor (1 µs, read back as 1.023 µs).
	near := func(d, want time.Duration) bool {
		if want == 0 {
			return d > 0 && d < 2*time.Microsecond
		}
		return math.Abs(float64(d-want)) <= 0.001*float64(want)
	}
	for i, want := range []struct {
		view     string
		p50, p99 time.Duration
		within   string
	}{
		{"propagate_start", 2500 * time.Microsecond, 4900 * time.Microsecond, "no (zkbench slower)"},
		{"propagate", 1900 * time.Microsecond, 1900 * time.Microsecond, "yes"},
		// 60 of the 100 reloads beat the reply: as the tool counts, they are
		// 0 (the histogram's floor) and fill the median.
		{ToolDefinition, 0, 1900 * time.Microsecond, "yes"},
	} {
		r := rows[i]
		if r.View != want.view || r.Missing || !near(r.ZkP50, want.p50) || !near(r.ZkP99, want.p99) {
			t.Errorf("row %d = %s p50 %v p99 %v (missing %v); want %s p50 %v p99 %v", i, r.View, r.ZkP50, r.ZkP99, r.Missing, want.view, want.p50, want.p99)
		}
		if wantRatio := float64(want.p99) / 1626174; math.Abs(r.Ratio-wantRatio) > 0.002*wantRatio {
			t.Errorf("%s: ratio %v, want %v", r.View, r.Ratio, wantRatio)
		}
		if got := r.Within(1.2); got != want.within {
			t.Errorf("%s: Within(1.2) = %q at %.3f, want %q", r.View, got, r.Ratio, want.within)
		}
	}
	if !rows[3].Missing || !math.IsNaN(rows[3].Ratio) || rows[3].Within(1.2) != "-" {
		t.Errorf("row of a latency the run did not record = %+v, want Missing with no ratio", rows[3])
	}
	var out bytes.Buffer
	if err := WriteTable(&out, rows, 1.2); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10 conns, 10 streams", "1.63 ms", "1.90 ms", "1.17", "absent", "within 1.2x", ToolDefinition} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}

	// A results file from before propagate_start has no tool view.
	delete(run.Results[0].Latency, figures.LatencyPropagateStart)
	rows, _, err = Compare(tools, run, []string{ToolDefinition})
	if err != nil || len(rows) != 1 || !rows[0].Missing {
		t.Errorf("without propagate_start: rows %+v, err %v; want the tool view absent", rows, err)
	}
}

func TestDefaultViews(t *testing.T) {
	got := splitViews(defaultViews)
	want := []string{"propagate_start", "propagate", ToolDefinition}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("splitViews(defaultViews) = %q, want %q", got, want)
	}
}

func TestCompareRefuses(t *testing.T) {
	tools := map[string]*ToolRun{"a.txt": parseFile(t, "watch-latency-10-conns.txt")}
	if _, _, err := Compare(tools, configRun(t, 100, 20, "1024"), []string{ToolDefinition}); err == nil || !strings.Contains(err.Error(), "no persistent etcd case at 10 clients") {
		t.Errorf("no case at the tool's watcher count: err = %v", err)
	}
	_, warnings, err := Compare(tools, configRun(t, 10, 2, "64KB"), []string{ToolDefinition})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "put 20 a second, zkbench's writer 2") || !strings.Contains(warnings[1], "1024 bytes, zkbench's config 64KB") {
		t.Errorf("warnings = %q, want the rate and the size named", warnings)
	}
	slow := configRun(t, 10, 20, "1024")
	slow.Results[0].Throughput = 11.5
	_, warnings, err = Compare(tools, slow, []string{ToolDefinition})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "zkbench at 10 clients: the writer made 11.5 updates a second, not 20") {
		t.Errorf("warnings = %q, want the writer's rate named", warnings)
	}
	lock := configRun(t, 10, 20, "1024")
	lock.Config.Workload = "lock"
	if _, _, err := Compare(tools, lock, []string{ToolDefinition}); err == nil {
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
