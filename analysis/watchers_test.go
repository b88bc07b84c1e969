package analysis

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

func configRun(size string, points map[int]time.Duration) *results.Run {
	run := &results.Run{Config: results.Config{Workload: "config", Params: map[string]string{"size": size}}}
	for n, p99 := range points {
		run.Results = append(run.Results, results.Result{Workload: "config", Backend: backends.Etcd, Variant: "persistent", Clients: n,
			Latency: map[figures.Latency]*results.Histogram{"propagate_last": {Count: 10, P99: int64(p99)}}})
	}
	return run
}

// TestWatcherCapacities: the answer is the largest measured count that met
// the target, with the next that missed, never a count between them; "at
// least" the largest when all met it, "none" when the smallest missed it;
// sizes are answered apart.
func TestWatcherCapacities(t *testing.T) {
	ms := time.Millisecond
	runs := []*results.Run{
		configRun("1024", map[int]time.Duration{10: 5 * ms, 100: 20 * ms, 1000: 200 * ms}),
		configRun("65536", map[int]time.Duration{10: 10 * ms, 100: 40 * ms}),
		configRun("1048576", map[int]time.Duration{10: 80 * ms, 100: 900 * ms}),
	}
	got := WatcherCapacities(runs, 50*ms)
	if len(got) != 3 {
		t.Fatalf("%d answers, want one a size: %+v", len(got), got)
	}
	if a := got[0]; a.Size != 1024 || a.Status != "measured" || a.Watchers != 100 || a.Missed != 1000 || a.Text() != "100 (met there; missed at 1000)" {
		t.Errorf("1KB: %+v (%q), want met at 100, missed at 1000", a, a.Text())
	}
	if a := got[1]; a.Status != "at least" || a.Watchers != 100 {
		t.Errorf("64KB: %+v, want at least 100", a)
	}
	if a := got[2]; a.Status != "none" || a.Watchers != 0 || a.Text() != "fewer than 10" {
		t.Errorf("1MB: %+v, want none", a)
	}
}

// A point is read from the write's start when the file keeps it, and the
// per-update figures come with it.
func TestWatcherPointFromStart(t *testing.T) {
	ms := time.Millisecond
	run := configRun("1024", map[int]time.Duration{1000: 20 * ms})
	r := &run.Results[0]
	r.Latency["propagate_last_start"] = &results.Histogram{Count: 10, P99: int64(60 * ms)}
	r.Latency["propagate_start"] = &results.Histogram{Count: 10000, P50: int64(5 * ms), P99: int64(40 * ms), P999: int64(55 * ms)}
	r.Ops.Succeeded = 10
	r.Cost = results.Cost{ServerCPUSeconds: 0.5, ServerCostMeasured: true}
	r.Watch = &results.WatchFootprint{WatchingClients: 1000, HeapPerWatcher: 380}
	got := WatcherCapacities([]*results.Run{run}, 50*ms)
	if len(got) != 1 || len(got[0].Points) != 1 {
		t.Fatalf("%+v", got)
	}
	p := got[0].Points[0]
	if !p.FromStart || p.LastP99 != 60*ms || p.P50 != 5*ms || p.P999 != 55*ms || p.ServerCPUPerUpdate != 0.05 || p.HeapPerWatcher != 380 {
		t.Errorf("point %+v: want the start clock's 60ms last p99, 50ms of server CPU an update, 380 B a watcher", p)
	}
	if got[0].Status != "none" {
		t.Errorf("status %q: 60ms from the start misses 50ms (the reply clock's 20ms would not)", got[0].Status)
	}
}
