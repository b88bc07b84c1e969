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

// TestWatcherCapacities: the answer is interpolated between the count that
// met the target and the next, "at least" the largest when all met it,
// "none" when the smallest missed it; sizes are answered apart.
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
	if a := got[0]; a.Size != 1024 || a.Status != "interpolated" || a.Watchers <= 100 || a.Watchers >= 1000 {
		t.Errorf("1KB: %+v, want between 100 and 1000", a)
	}
	if a := got[1]; a.Status != "at least" || a.Watchers != 100 {
		t.Errorf("64KB: %+v, want at least 100", a)
	}
	if a := got[2]; a.Status != "none" || a.Watchers != 0 {
		t.Errorf("1MB: %+v, want none", a)
	}
}
