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
	run, out := keptSummary(t, "../docs/runs/handoff-path-etcd/results.json")
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
	var b strings.Builder
	if err := writeText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "cpu floor") {
		t.Errorf("a run without the servers' cost got the CPU floor:\n%s", b.String())
	}
}

// The members' log syncs beside the floors: etcd counts and times its WAL's
// fsyncs, ZooKeeper counts its transaction log's (and times them in whole
// milliseconds only, so it has no log floor).
func TestSummaryHandoffPathLogSyncs(t *testing.T) {
	for path, want := range map[string][]string{
		// 31,208 fsyncs, 13.33 s, over 16,217 acquisitions, one member.
		"../docs/runs/handoff-path-etcd/results.json": {"writes (server)  log syncs  mean sync  log floor\n",
			"2.00             1.92       427µs      822µs\n", "the log floor: a member's sync time"},
		"../docs/runs/handoff-path-zookeeper/results.json": {"writes (server)  log syncs\n", "2.00             1.69\n",
			"the members' write-ahead logs: syncs an acquisition on each member"},
	} {
		run, out := keptSummary(t, path)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the handoff table lacks %q:\n%s", path, w, out)
			}
		}
		if run.Cluster.Kind == backends.ZooKeeper && strings.Contains(out, "log floor") {
			t.Errorf("%s: a log floor from syncs timed in whole milliseconds:\n%s", path, out)
		}
	}
}

// A member syncs its own log: the servers' sum is divided by the members.
// A partial server count, or none, has neither figure.
func TestLogSyncsPerMember(t *testing.T) {
	run := &results.Run{Cluster: backends.ClusterInfo{Members: make([]backends.MemberInfo, 3)}}
	res := &results.Result{Ops: results.Ops{Succeeded: 100},
		Server: backends.Metrics{backends.MetricLogSyncs: 600, backends.MetricLogSyncSeconds: 0.3}}
	if n, ok := LogSyncs(run, res); !ok || n != 2 {
		t.Errorf("LogSyncs = %v, %v; want 2 a member", n, ok)
	}
	if d, ok := LogFloor(run, res); !ok || d != time.Millisecond {
		t.Errorf("LogFloor = %v, %v; want 1ms a member", d, ok)
	}
	if d, ok := MeanLogSync(res); !ok || d != 500*time.Microsecond {
		t.Errorf("MeanLogSync = %v, %v; want 500µs", d, ok)
	}
	res.ServerPartial = true
	if _, ok := LogSyncs(run, res); ok {
		t.Error("LogSyncs from a partial server count")
	}
	if _, ok := LogFloor(run, res); ok {
		t.Error("LogFloor from a partial server count")
	}
	res.ServerPartial = false
	delete(res.Server, backends.MetricLogSyncSeconds)
	if _, ok := LogFloor(run, res); ok {
		t.Error("LogFloor without the syncs' time")
	}
}

// keptSummary reads the kept run at path and prints its text summary.
func keptSummary(t *testing.T, path string) (*results.Run, string) {
	t.Helper()
	run, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writeText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	return run, b.String()
}
