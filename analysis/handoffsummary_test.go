package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// The summary's handoff table: a row for each case with the critical path,
// the run's calibration above it and the handoff against its notify.
func TestSummaryHandoffPath(t *testing.T) {
	h := func(n int64, p50 time.Duration) *results.Histogram {
		return &results.Histogram{Count: n, P50: int64(p50)}
	}
	run := &results.Run{ID: "hp", Status: results.StatusComplete,
		Calibration: &results.Calibration{Backend: backends.Etcd, WriteLatency: 440 * time.Microsecond, NotifyLatency: 590 * time.Microsecond},
		Results: []results.Result{
			{Backend: backends.Etcd, Workload: "lock", Variant: "naive", Clients: 20,
				Latency: map[figures.Latency]*results.Histogram{figures.LatencyHandoff: h(991, 3680*time.Microsecond)}},
			{Backend: backends.Etcd, Workload: "lock", Variant: "fair", Clients: 20,
				Latency: map[figures.Latency]*results.Histogram{
					figures.LatencyHandoff:       h(3104, 1444*time.Microsecond),
					figures.LatencyReleaseCall:   h(3104, 823*time.Microsecond),
					figures.LatencyHandoffNotify: h(3104, 840*time.Microsecond),
					figures.LatencyHandoffDecide: h(3104, 552*time.Microsecond),
				}},
		}}
	var b strings.Builder
	if err := writeText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out)
	i := strings.Index(out, "handoff's critical path")
	if i < 0 {
		t.Fatalf("no handoff table in\n%s", out)
	}
	table := out[i:]
	for _, want := range []string{"calibrated on the run's etcd cluster (p50): write 440µs, write + notify 590µs",
		"release-event", "event-grant", "x notify", "3104", "1.44ms", "823µs", "840µs", "552µs", "2.45x"} {
		if !strings.Contains(table, want) {
			t.Errorf("the handoff table lacks %q", want)
		}
	}
	if strings.Contains(table, "naive") {
		t.Errorf("the naive case, whose handoffs were not split, has a row:\n%s", table)
	}
}

// With the notify measured after the hold too, the table says so above it
// and gains the handoff against it; without, neither appears.
func TestSummaryHandoffPathPaced(t *testing.T) {
	run := handoffRun(&results.Calibration{Backend: backends.ZooKeeper, WriteLatency: 600 * time.Microsecond,
		NotifyLatency: 640 * time.Microsecond, NotifyPace: 50 * time.Millisecond, PacedNotifyLatency: 1600 * time.Microsecond})
	var b strings.Builder
	if err := writeText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"after 50ms idle, the hold, as before each handoff: write + notify 1.60ms (x paced)",
		"x paced", "2.81x", "1.12x"} {
		if !strings.Contains(out, want) {
			t.Errorf("the handoff table lacks %q:\n%s", want, out)
		}
	}
	run.Calibration.PacedNotifyLatency = 0
	b.Reset()
	if err := writeText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "x paced") {
		t.Errorf("a calibration without the paced notify got its column:\n%s", b.String())
	}
}

// With the notify measured behind another write too (a run without a
// hold), the table says so above it and gains the handoff against it.
func TestSummaryHandoffPathContended(t *testing.T) {
	run := handoffRun(&results.Calibration{Backend: backends.Etcd, WriteLatency: 600 * time.Microsecond,
		NotifyLatency: 700 * time.Microsecond, ContendedNotifyLatency: 900 * time.Microsecond})
	var b strings.Builder
	if err := writeText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"behind another session's write, as a release beside the last holder's enqueue: write + notify 900µs (x contended)",
		"x contended", "2.57x", "2.00x"} {
		if !strings.Contains(out, want) {
			t.Errorf("the handoff table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "x paced") {
		t.Errorf("a calibration without the paced notify got its column:\n%s", out)
	}
}

// handoffRun is a run calibrated as cal with one fair lock case on cal's
// backend whose handoffs took 1.8 ms (p50).
func handoffRun(cal *results.Calibration) *results.Run {
	return &results.Run{ID: "h", Status: results.StatusComplete, Calibration: cal,
		Results: []results.Result{{Backend: cal.Backend, Workload: "lock", Variant: "fair", Clients: 100,
			Latency: map[figures.Latency]*results.Histogram{
				figures.LatencyHandoff:       {Count: 180, P50: int64(1800 * time.Microsecond)},
				figures.LatencyHandoffNotify: {Count: 180, P50: int64(1790 * time.Microsecond)},
			}}}}
}

// On the kept back-to-back etcd run (a local member), the table gains the
// time an acquisition and the CPU floor, with the line that says what the
// floor is; on a run whose servers were not measured, neither appears.
func TestSummaryHandoffPathCPUFloor(t *testing.T) {
	run, err := results.ReadFile("../docs/runs/handoff-path-etcd/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writeText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// 540.4 acquisitions/s (1.85 ms each); the member's 28.8 s of CPU over
	// 30.0 s, with 1.35 of the 2 cores left it: 1.32 ms.
	for _, want := range []string{"cpu floor: the servers' CPU an acquisition", "1/ops", "cpu floor", "1.85ms  1.32ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("the handoff table lacks %q:\n%s", want, out)
		}
	}
	for i := range run.Results {
		run.Results[i].Cost.ServerCostMeasured = false
	}
	b.Reset()
	if err := writeText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "cpu floor") {
		t.Errorf("a run without the servers' cost got the CPU floor:\n%s", b.String())
	}
}
