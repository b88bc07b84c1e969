package analysis

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
)

// TestCPUFloor: the servers' CPU an operation over the cores the load
// generator and other processes left them, only where the servers shared
// the machine and were measured apart from the load generator.
func TestCPUFloor(t *testing.T) {
	// 10,000 operations in 10 s; the servers took 10 s of CPU (1 ms an
	// operation); the load generator 4 s and others 2 s of 2 cores' 20 s,
	// so the servers could have had 2 - 0.6 = 1.4 cores: 1 ms / 1.4.
	res := func() *results.Result {
		return &results.Result{
			Throughput: 1000,
			Cost:       results.Cost{ServerCPUSeconds: 10, ServerCostMeasured: true, ClientCPUSeconds: 4},
			Load:       &results.Load{Machine: &results.Machine{Cores: 2, Elapsed: 10 * time.Second, Others: 2}},
		}
	}
	want := 714_285 * time.Nanosecond // 1 ms / 1.4
	for _, mode := range []string{"local", "docker"} {
		got, ok := CPUFloor(&results.Run{ClusterMode: mode}, res())
		if !ok || (got-want).Abs() > time.Microsecond {
			t.Errorf("%s: CPUFloor = %v, %v; want %v", mode, got, ok, want)
		}
	}
	if p, ok := Period(res()); !ok || p != time.Millisecond {
		t.Errorf("Period = %v, %v; want 1ms (1,000 operations a second)", p, ok)
	}
	if p, ok := Period(&results.Result{}); ok {
		t.Errorf("Period of a case without throughput = %v, want none", p)
	}
	cases := map[string]func(*results.Run, *results.Result){
		"remote servers":         func(r *results.Run, _ *results.Result) { r.ClusterMode = "remote" },
		"embedded server":        func(r *results.Run, _ *results.Result) { r.ClusterMode = "embedded" },
		"merged shards":          func(r *results.Run, _ *results.Result) { r.MergedShards = 2 },
		"server cost unmeasured": func(_ *results.Run, res *results.Result) { res.Cost.ServerCostMeasured = false },
		"no operation":           func(_ *results.Run, res *results.Result) { res.Throughput = 0 },
		"no machine load":        func(_ *results.Run, res *results.Result) { res.Load.Machine = nil },
		"no load":                func(_ *results.Run, res *results.Result) { res.Load = nil },
		"no core left":           func(_ *results.Run, res *results.Result) { res.Load.Machine.Others = 16 },
	}
	for name, spoil := range cases {
		run, r := &results.Run{ClusterMode: "local"}, res()
		spoil(run, r)
		if got, ok := CPUFloor(run, r); ok {
			t.Errorf("%s: CPUFloor = %v, want none", name, got)
		}
	}
}
