package analysis

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

// constSampler draws d every time.
func constSampler(t *testing.T, d time.Duration) *Sampler {
	t.Helper()
	h := results.NewRecorder()
	for range 100 {
		results.Record(h, d)
	}
	s, err := NewSampler(h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The queue against what a constant service makes certain.
func TestQueueConstantService(t *testing.T) {
	ms := time.Millisecond
	// Closed loop, no think: 10 clients always asking, 1 ms handoffs: each
	// waits for the 9 ahead of it and its own handoff, 10 ms; 1000/s.
	r, err := Queue{Clients: 10, Handoff: constSampler(t, ms), Acquisitions: 20_000}.Simulate()
	if err != nil {
		t.Fatal(err)
	}
	if p := r.P(50); math.Abs(Millis(p)-10) > 0.05 || math.Abs(r.Throughput-1000) > 1 || r.Utilisation < 0.999 {
		t.Errorf("closed loop: p50 %v, %v/s, utilisation %v; want 10ms, 1000/s, 1", p, r.Throughput, r.Utilisation)
	}
	if math.Abs(r.WaitersAtHandoff-9) > 0.01 || r.QueuedShare < 0.999 {
		t.Errorf("closed loop: %v waiters at a handoff, %v queued; want 9 (N−1), all", r.WaitersAtHandoff, r.QueuedShare)
	}
	// Open loop at 200/s, 1 ms handoff and 1 ms hold: never queued, every
	// wait one handoff, utilisation 40%.
	r, err = Queue{Clients: 5, Rate: 200, Hold: ms, Handoff: constSampler(t, ms), Acquisitions: 20_000}.Simulate()
	if err != nil {
		t.Fatal(err)
	}
	if p := r.P(99); math.Abs(Millis(p)-1) > 0.01 || math.Abs(r.Utilisation-0.4) > 0.01 || math.Abs(r.Offered-0.4) > 1e-3 {
		t.Errorf("open loop: p99 %v, utilisation %v, offered %v; want 1ms, 0.4, 0.4", p, r.Utilisation, r.Offered)
	}
	// Overloaded: 600/s against 2 ms service: the waits grow with the run.
	short, _ := Queue{Clients: 5, Rate: 600, Hold: ms, Handoff: constSampler(t, ms), Acquisitions: 5_000}.Simulate()
	long, _ := Queue{Clients: 5, Rate: 600, Hold: ms, Handoff: constSampler(t, ms), Acquisitions: 20_000}.Simulate()
	if short.Offered < 1 || long.P(99) <= 2*short.P(99) {
		t.Errorf("overload: offered %v, p99 %v then %v: the wait must grow with the run", short.Offered, short.P(99), long.P(99))
	}
	// Finite source: one client asking 9 ms after each 1 ms handoff never
	// waits for anyone.
	r, _ = Queue{Clients: 1, Think: 9 * ms, Handoff: constSampler(t, ms), Acquisitions: 5_000}.Simulate()
	if math.Abs(r.Throughput-100) > 0.5 || math.Abs(Millis(r.P(99))-1) > 0.01 {
		t.Errorf("finite source, one client: %v/s p99 %v, want 100/s, 1ms", r.Throughput, r.P(99))
	}
	if _, err := (Queue{Clients: 0, Handoff: constSampler(t, ms)}).Simulate(); err == nil {
		t.Error("0 clients simulated")
	}
}

func TestQueueDeterministic(t *testing.T) {
	h := results.NewRecorder()
	for i := range 1000 {
		results.Record(h, time.Duration(500+i)*time.Microsecond)
	}
	s, _ := NewSampler(h)
	q := Queue{Clients: 20, Rate: 400, Hold: time.Millisecond, Handoff: s, Seed: 7, Acquisitions: 30_000}
	a, _ := q.Simulate()
	b, _ := q.Simulate()
	if a.P(99) != b.P(99) || a.Throughput != b.Throughput {
		t.Errorf("same seed, different answers: %v %v / %v %v", a.P(99), a.Throughput, b.P(99), b.Throughput)
	}
}

// Predict on the synthetic lock sweep: the closed loop it measured is
// reproduced, every number has a source, and bad requests say what to do.
func TestPredictLockSweep(t *testing.T) {
	run, err := results.ReadFile(testresults.Path("lock-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	runs := []*results.Run{run}
	n := testresults.LockClients[0]
	a, err := Predict(runs, Workload{Workload: "lock", Variant: "fair", Clients: n, Percentile: 99, Bound: 50 * time.Millisecond, Acquisitions: 20_000})
	if err != nil {
		t.Fatal(err)
	}
	p := a.Asked
	// A closed loop with no think: throughput is 1 / mean handoff, which
	// the measured case's throughput is too (within the histogram's
	// resolution and the synthetic file's rounding).
	c := Cases(runs)
	var measured float64
	for _, x := range c {
		if x.Variant == "fair" && x.Clients == n {
			measured, _ = x.Throughput()
		}
	}
	if p.Basis.Run != run.ID || p.BasisClients != n || p.Extrapolated {
		t.Errorf("basis %+v N=%d extrapolated %v", p.Basis, p.BasisClients, p.Extrapolated)
	}
	if got := p.Sim.Throughput; math.Abs(got-1/p.Handoff.Seconds())/got > 0.02 {
		t.Errorf("closed loop throughput %v, 1/handoff %v (measured %v)", got, 1/p.Handoff.Seconds(), measured)
	}
	if len(p.Load) == 0 || p.Load[0].Source.Run != run.ID || len(p.Resources) == 0 {
		t.Errorf("load %+v resources %+v", p.Load, p.Resources)
	}
	if len(a.Others) == 0 {
		t.Error("no other variant beside fair")
	}
	var out strings.Builder
	if err := a.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"measured: run " + run.ID, "model: simulation", "first to saturate", "every variant at the same point"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	largest := testresults.LockClients[len(testresults.LockClients)-1]
	if _, err := Predict(runs, Workload{Workload: "lock", Variant: "fair", Clients: 3 * largest, Every: time.Second, Percentile: 99, Bound: time.Second}); err == nil || !strings.Contains(err.Error(), "measure it") {
		t.Errorf("3x the largest N: %v", err)
	}
	if _, err := Predict(runs, Workload{Workload: "lock", Variant: "nope", Clients: 10, Every: time.Second, Percentile: 99, Bound: time.Second}); !errors.Is(err, ErrNoData) {
		t.Errorf("unknown variant: %v", err)
	}
	// A backend the results do not hold: the refusal says what they hold.
	if _, err := Predict(runs, Workload{Workload: "lock", Backend: "etcd", Variant: "fair", Clients: 10, Every: time.Second, Percentile: 99, Bound: time.Second}); !errors.Is(err, ErrNoData) ||
		!strings.Contains(err.Error(), "no closed-loop lock case on etcd, only lock on zookeeper") {
		t.Errorf("a backend not measured: %v", err)
	}
	a, err = Predict(runs, Workload{Workload: "lock", Variant: "fair", Clients: 2 * largest, Every: time.Second, Percentile: 99, Bound: time.Second, Acquisitions: 5_000})
	if err != nil || !a.Asked.Extrapolated || !strings.Contains(a.Asked.Range, "EXTRAPOLATED") {
		t.Errorf("2x the largest N: %+v %v", a, err)
	}
}

// The USL recovers the parameters it was made from, and with three client
// counts says the fit is exact.
func TestFitUSL(t *testing.T) {
	truth := USL{Lambda: 300, Sigma: 0.05, Kappa: 0.002}
	var n, x []float64
	for i, c := range []float64{1, 2, 4, 8, 16, 32, 64} {
		n = append(n, c)
		x = append(x, truth.At(c)*(1+0.01*float64(i%3-1))) // ±1%
	}
	u, err := FitUSL(n, x)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(u.Kappa-truth.Kappa)/truth.Kappa > 0.15 || math.Abs(u.Lambda-truth.Lambda)/truth.Lambda > 0.05 || u.Exact {
		t.Errorf("fit %s, want %s", u, truth)
	}
	if !(u.KappaCI[0] <= truth.Kappa && truth.Kappa <= u.KappaCI[1]) {
		t.Errorf("κ interval %v misses %v", u.KappaCI, truth.Kappa)
	}
	// A herd-free shape (κ 0) fits κ near 0.
	var y []float64
	for _, c := range n {
		y = append(y, USL{Lambda: 300, Sigma: 0.1}.At(c))
	}
	if u, _ := FitUSL(n, y); u.Kappa > 1e-4 {
		t.Errorf("κ-free data fit κ %v", u.Kappa)
	}
	u, err = FitUSL(n[:3], x[:3])
	if err != nil || !u.Exact || !strings.Contains(u.String(), "exact") {
		t.Errorf("three counts: %s %v", u, err)
	}
	if _, err := FitUSL(n[:2], x[:2]); !errors.Is(err, ErrUSLPoints) {
		t.Errorf("two counts: %v", err)
	}
}

// A herd's handoff grows with the waiters it makes: on a ZooKeeper sweep
// made on a loaded machine (kept at cf419e6, testdata), 20 naive clients asking at 80/s in all settle either with a
// couple of waiters or overloaded, depending on where the simulation
// starts; the answer is the worse and names the other. The fair lock's
// handoff does not grow with waiters: one state.
func TestPredictTwoStates(t *testing.T) {
	run, err := results.ReadFile("testdata/usl-zookeeper-cf419e6.json")
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{Workload: "lock", Variant: "naive", Clients: 20, Every: 250 * time.Millisecond, Hold: 2 * time.Millisecond, Percentile: 99, Bound: 50 * time.Millisecond, Acquisitions: 50_000}
	a, err := Predict([]*results.Run{run}, w)
	if err != nil {
		t.Fatal(err)
	}
	p := a.Asked
	if p.OtherState == nil || !p.Overloaded || p.OtherState.P99 >= 50*time.Millisecond || p.OtherState.WaitersAtHandoff >= p.Sim.WaitersAtHandoff {
		t.Fatalf("naive at 80/s: overloaded %v, other state %+v; want overloaded with a better state beside it", p.Overloaded, p.OtherState)
	}
	var out strings.Builder
	if err := a.Write(&out); err != nil || !strings.Contains(out.String(), "TWO STATES") {
		t.Errorf("output does not say so (%v):\n%s", err, out.String())
	}
	for _, o := range a.Others {
		if o.Variant == "fair" && (o.OtherState != nil || o.Overloaded) {
			t.Errorf("fair at 80/s: overloaded %v, other state %+v; want one state that keeps up", o.Overloaded, o.OtherState)
		}
	}
}
