package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestFitGrowthPicksTheModel(t *testing.T) {
	ns := []float64{2, 4, 8, 16, 32, 64}
	gen := func(f func(float64) float64) []float64 {
		y := make([]float64, len(ns))
		for i, n := range ns {
			y[i] = f(n)
		}
		return y
	}
	tests := []struct {
		name  string
		y     []float64
		model string
		a, b  float64
	}{
		{"naive fan-out N-1", gen(func(n float64) float64 { return n - 1 }), Linear, -1, 1},
		{"requests 3+2N", gen(func(n float64) float64 { return 3 + 2*n }), Linear, 3, 2},
		{"power law", gen(func(n float64) float64 { return 0.5 * math.Pow(n, 1.5) }), Power, 0.5, 1.5},
		{"square root", gen(func(n float64) float64 { return 4 * math.Sqrt(n) }), Power, 4, 0.5},
		{"herd-free fan-out", gen(func(float64) float64 { return 1 }), Constant, 1, 0},
		{"flat with noise", []float64{1.01, 0.99, 1.0, 1.02, 0.98, 1.0}, Constant, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := FitGrowth(ns, tt.y)
			if err != nil {
				t.Fatal(err)
			}
			if f.Model != tt.model || !near(f.A, tt.a, 1e-6) || !near(f.B, tt.b, 1e-6) {
				t.Fatalf("fit %+v, want %s a=%v b=%v", f, tt.model, tt.a, tt.b)
			}
			if tt.model != Constant && f.R2 < 0.999999 {
				t.Errorf("R² = %v for exact data", f.R2)
			}
			if !f.Exact() && strings.Contains(f.String(), "exact") {
				t.Errorf("String() = %q", f.String())
			}
		})
	}
}

func TestFitGrowthNoisyPowerLaw(t *testing.T) {
	ns := []float64{10, 20, 50, 100, 200, 500, 1000}
	noise := []float64{1.05, 0.97, 1.02, 0.95, 1.04, 0.98, 1.01}
	y := make([]float64, len(ns))
	for i, n := range ns {
		y[i] = 0.02 * n * n * noise[i]
	}
	f, err := FitGrowth(ns, y)
	if err != nil {
		t.Fatal(err)
	}
	if f.Model != Power || !near(f.B, 2, 0.03) || f.R2 < 0.99 || f.Power.R2 <= f.Linear.R2 {
		t.Fatalf("fit %+v: want a power law of exponent about 2 that beats the line", f)
	}
	if n, ok := f.Solve(f.At(300)); !ok || !near(n, 300, 1e-9) {
		t.Fatalf("Solve(At(300)) = %v, %v", n, ok)
	}
	if !f.Extrapolated(2000) || f.Extrapolated(300) {
		t.Fatal("Extrapolated is wrong")
	}
}

func TestFitGrowthRejects(t *testing.T) {
	if _, err := FitGrowth([]float64{8}, []float64{1}); err != ErrTooFewPoints {
		t.Errorf("one point: %v", err)
	}
	if _, err := FitGrowth([]float64{8, 8}, []float64{1, 2}); err != ErrTooFewPoints {
		t.Errorf("one client count: %v", err)
	}
	if _, err := FitGrowth([]float64{0, 8}, []float64{1, 2}); err == nil {
		t.Error("accepted N=0")
	}
	f, err := FitGrowth([]float64{2, 4}, []float64{1, 3})
	if err != nil || !f.Exact() || !strings.Contains(f.String(), "not evidence") {
		t.Errorf("two points: %+v %v %q", f, err, f.String())
	}
	// Zero values allow only the linear model.
	f, err = FitGrowth([]float64{2, 4, 8}, []float64{0, 2, 6})
	if err != nil || f.Model != Linear || f.Power.OK {
		t.Errorf("with a zero: %+v %v", f, err)
	}
}

func TestBuildOnLockSweep(t *testing.T) {
	var runs []*results.Run
	for _, n := range []string{"lock-zookeeper.json", "lock-etcd.json"} {
		r, err := results.ReadFile(testresults.Path(n))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	// A latency target on a histogram no case recorded is refused, with
	// those they did.
	if _, err := PlanCapacity(runs, Target{Latency: "bogus"}); err == nil || !strings.Contains(err.Error(), "--latency bogus: no case of these runs recorded it; they recorded acquire") {
		t.Errorf("--latency bogus: %v", err)
	}
	plan, err := PlanCapacity(runs, Target{AtClients: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Series) != 6 {
		t.Fatalf("%d series, want 3 variants x 2 backends", len(plan.Series))
	}
	for _, sp := range plan.Series {
		fan, ok := sp.Fits["watch_events/op"]
		if !ok {
			t.Fatalf("%v: no fan-out fit", sp.Series)
		}
		switch sp.Variant {
		case "naive":
			// The synthetic naive lock delivers N-1 notifications per grant.
			if fan.Model != Linear || !near(fan.B, 1, 1e-9) || !fan.Grows() {
				t.Errorf("%v naive fan-out fit %v", sp.Backend, fan)
			}
		default:
			if fan.Model != Constant {
				t.Errorf("%v %s fan-out fit %v, want constant", sp.Backend, sp.Variant, fan)
			}
		}
		if sp.Latency != "acquire" {
			t.Errorf("latency %q", sp.Latency)
		}
		if sat := sp.Saturation; sat.Status != "measured" || sat.Throughput <= 0 || len(sat.Runs) != 1 || sat.Cost["requests"] <= 0 {
			t.Errorf("%v saturation %+v: want the peak throughput, its run and its cost per operation", sp.Series, sat)
		}
		if w := sp.Waiters; w == nil || w.Status == "not measured" || len(w.Points) == 0 || w.Text == "" || len(w.Points[0].Runs) != 1 {
			t.Errorf("%v waiters %+v: want the handoffs by waiters, an answer and its runs", sp.Series, w)
		}
		d := sp.Demand
		if d == nil || d.Clients != 500 || !d.Extrapolated || d.RequestsSide != "server" {
			t.Fatalf("%v demand %+v", sp.Series, d)
		}
		// The naive lock's falling throughput line crosses zero before
		// 500 clients; the others' do not.
		if want := map[bool]string{true: NotProjectable, false: "fit"}[sp.Variant == "naive"]; d.RateSource != want || (want == NotProjectable) != (d.Rate == 0) {
			t.Errorf("%v demand rate %v from %q, want from %q", sp.Series, d.Rate, d.RateSource, want)
		}
		if !near(d.RequestsPerSec, d.Rate*d.RequestsPerOp, 1e-12) {
			t.Errorf("demand does not multiply out: %+v", d)
		}
		if sp.Backend == "etcd" {
			if len(sp.Headroom) != len(testresults.LockClients) || sp.Headroom[0].WriteShare <= 0 || sp.Headroom[0].HandoffShare <= 0 {
				t.Errorf("etcd headroom %+v", sp.Headroom)
			}
		} else if len(sp.Headroom) != 0 {
			t.Errorf("zookeeper run has no calibration but headroom %+v", sp.Headroom)
		}
	}
}

// A client-bound case measured the load generator: capacity planning
// leaves it out of fits and answers, and says so with its reason.
func TestPlanLeavesClientBoundOut(t *testing.T) {
	run, err := results.ReadFile(testresults.Path("lock-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := PlanCapacity([]*results.Run{run}, Target{})
	if err != nil {
		t.Fatal(err)
	}
	largest := testresults.LockClients[len(testresults.LockClients)-1]
	bound := &results.ClientBound{Reasons: []results.BoundReason{results.BoundCPU}, Detail: "cpu (97% of 2 cores)"}
	for i := range run.Results {
		if run.Results[i].Clients == largest {
			run.Results[i].ClientBound = bound
		}
	}
	plan, err := PlanCapacity([]*results.Run{run}, Target{})
	if err != nil {
		t.Fatal(err)
	}
	for i, sp := range plan.Series {
		if len(sp.Excluded) != 1 || sp.Excluded[0].Clients != largest || sp.Excluded[0].Reason != bound.Detail {
			t.Fatalf("%v excluded %+v, want N=%d with its reason", sp.Series, sp.Excluded, largest)
		}
		if !strings.Contains(sp.Saturation.Text, fmt.Sprintf("N=%d left out: client-bound", largest)) {
			t.Errorf("%v saturation %q does not say what was left out", sp.Series, sp.Saturation.Text)
		}
		if sp.Saturation.Clients == largest {
			t.Errorf("%v saturation at the client-bound N=%d", sp.Series, largest)
		}
		fan, was := sp.Fits["watch_events/op"], full.Series[i].Fits["watch_events/op"]
		if fan.Points != was.Points-1 {
			t.Errorf("%v fan-out fit over %d points, the full plan's over %d: the client-bound case must be left out", sp.Series, fan.Points, was.Points)
		}
	}
}
