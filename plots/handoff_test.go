package plots

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

// The handoff path chart: a row for the variant whose handoffs were split,
// its two parts stacked at each client count, the handoff over them and the
// run's calibrated notify as the floor; none for the variant without.
func TestHandoffPathChart(t *testing.T) {
	h := func(p50 time.Duration) *results.Histogram { return testresults.Constant(t, 100, p50) }
	run := &results.Run{ID: "hp", Status: results.StatusComplete,
		Calibration: &results.Calibration{Backend: backends.Etcd, NotifyLatency: 590 * time.Microsecond}}
	for _, n := range []int{10, 100} {
		run.Results = append(run.Results,
			results.Result{Workload: "lock", Backend: backends.Etcd, Variant: "naive", Clients: n, Ops: results.Ops{Succeeded: 100},
				Latency: map[figures.Latency]*results.Histogram{figures.LatencyHandoff: h(3 * time.Millisecond)}},
			results.Result{Workload: "lock", Backend: backends.Etcd, Variant: "fair", Clients: n, Ops: results.Ops{Succeeded: 100},
				Latency: map[figures.Latency]*results.Histogram{
					figures.LatencyHandoff:       h(1400 * time.Microsecond),
					figures.LatencyHandoffNotify: h(840 * time.Microsecond),
					figures.LatencyHandoffDecide: h(550 * time.Microsecond),
				}})
	}
	figs, err := Build([]*results.Run{run})
	if err != nil {
		t.Fatal(err)
	}
	f := Find(figs, "lock-handoff-path")
	if f == nil {
		t.Fatal("no lock-handoff-path chart")
	}
	if f.Rows != 1 || len(f.Panels) != 1 {
		t.Fatalf("%d rows, %d panels: want one, for the fair lock", f.Rows, len(f.Panels))
	}
	p := f.Panels[0]
	got := map[string]Line{}
	for _, l := range p.Lines {
		got[l.Label] = l
	}
	for label, want := range map[string]float64{"release to watch event": 0.84, "watch event to grant": 0.55, "handoff": 1.4, "calibrated write + notify": 0.59} {
		l, ok := got[label]
		if !ok || len(l.Points) != 2 {
			t.Errorf("%s: %d points, want 2 (lines %v)", label, len(l.Points), p.Lines)
			continue
		}
		if y := l.Points[0].Y; y < want*0.99 || y > want*1.01 {
			t.Errorf("%s at %v clients: %v ms, want %v", label, l.Points[0].X, y, want)
		}
	}
	if !got["release to watch event"].Bar || !got["watch event to grant"].Bar {
		t.Errorf("the two parts are not stacked bars")
	}
}
