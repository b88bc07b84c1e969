package analysis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

// idleRun is a one-client open-loop run of the fair lock at rate whose
// every acquire took d, made of one of the sweep's fair cases.
func idleRun(t *testing.T, sweep *results.Run, id string, rate float64, d time.Duration) *results.Run {
	t.Helper()
	r := *sweep
	r.ID = id
	r.Config.Rate = rate
	r.Results = nil
	for _, res := range sweep.Results {
		if res.Variant != "fair" || len(r.Results) > 0 {
			continue
		}
		res.Clients = 1
		res.Latency = map[figures.Latency]*results.Histogram{figures.LatencyAcquire: testresults.Constant(t, 1000, d)}
		res.Throughput = rate
		r.Results = append(r.Results, res)
	}
	if len(r.Results) == 0 {
		t.Fatal("the sweep has no fair case")
	}
	return &r
}

// With one-client open-loop runs beside the sweep, the plan draws its
// uncontended acquires at the workload's rate: from the run at that rate,
// or a mixture, linear in log rate, of the two around it; a run that fell
// behind its schedule is not one of them.
func TestPredictIdleRate(t *testing.T) {
	sweep, err := results.ReadFile(testresults.Path("lock-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	slow, fast := idleRun(t, sweep, "idle-10", 10, 8*ms), idleRun(t, sweep, "idle-100", 100, 2*ms)
	behind := idleRun(t, sweep, "idle-40", 40, 50*ms)
	for i := range behind.Results {
		behind.Results[i].Throughput = 30 // 75% of its schedule
	}
	// 1 client every 100 ms, hold 0: never contended, so every wait is an
	// uncontended acquire.
	w := Workload{Workload: "lock", Variant: "fair", Clients: 1, Every: time.Second / 10, Percentile: 99, Bound: time.Second, Acquisitions: 20_000}
	at := func(w Workload, runs ...*results.Run) *Prediction {
		t.Helper()
		a, err := Predict(append([]*results.Run{sweep}, runs...), w)
		if err != nil {
			t.Fatal(err)
		}
		return a.Asked
	}
	if p := at(w, slow, fast, behind); p.Idle == nil || p.Idle.Run != "idle-10" || math.Abs(Millis(p.P50)-8) > 0.1 || math.Abs(Millis(p.P99)-8) > 0.1 {
		t.Errorf("at 10/s: idle %+v, p50 %v p99 %v; want idle-10 alone, 8ms", p.Idle, p.P50, p.P99)
	}
	// At √(10·100) ≈ 31.6/s, halfway in log rate: half the draws each.
	w.Every = time.Duration(float64(time.Second) / math.Sqrt(1000))
	p := at(w, slow, fast, behind)
	if p.Idle == nil || !strings.Contains(p.Idle.Run, "idle-10 and idle-100") || !strings.Contains(p.Idle.Case, "mixed 50:50") {
		t.Fatalf("at 31.6/s: idle %+v; want idle-10 and idle-100 mixed 50:50", p.Idle)
	}
	if q := Millis(time.Duration(p.Sim.Wait.ValueAtQuantile(40))); math.Abs(q-2) > 0.1 {
		t.Errorf("at 31.6/s: p40 %vms, want 2 (half the draws 2 ms)", q)
	}
	if q := Millis(time.Duration(p.Sim.Wait.ValueAtQuantile(60))); math.Abs(q-8) > 0.1 {
		t.Errorf("at 31.6/s: p60 %vms, want 8 (half the draws 8 ms)", q)
	}
	// Beyond the measured rates, the nearest; without idle runs, none.
	w.Every = time.Second / 1000
	w.Clients = 1
	if p := at(w, slow, fast); p.Idle == nil || p.Idle.Run != "idle-100" {
		t.Errorf("at 1000/s: idle %+v, want idle-100", p.Idle)
	}
	if p := at(w, slow, fast); !strings.Contains(p.Idle.Case, "outside the measured range") {
		t.Errorf("at 1000/s: idle case %q does not say it is outside the measured rates", p.Idle.Case)
	}
	if p := at(w); p.Idle != nil {
		t.Errorf("no idle runs: idle %+v", p.Idle)
	}
	// The run behind its schedule is listed as left out, with why.
	w.Every = time.Second / 10
	if p := at(w, slow, fast, behind); !strings.Contains(strings.Join(p.Skipped, "\n"), "run idle-40 case lock/zookeeper/fair/N=1 (one-client open loop): behind its schedule") {
		t.Errorf("skipped %q: the run behind its schedule is not named", p.Skipped)
	}
	// A closed loop without think time is the sweep's own point: no idle
	// run replaces its one-client case.
	if p := at(Workload{Workload: "lock", Variant: "fair", Clients: 2, Percentile: 99, Bound: time.Second, Acquisitions: 5_000}, slow, fast); p.Idle != nil {
		t.Errorf("closed loop: idle %+v, want none", p.Idle)
	}
	var out strings.Builder
	a, _ := Predict([]*results.Run{sweep, slow, fast}, w)
	if err := a.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "uncontended acquires drawn at the workload's") || !strings.Contains(out.String(), "measured at this rate") {
		t.Errorf("the plan does not say where its uncontended acquires come from:\n%s", out.String())
	}
}
