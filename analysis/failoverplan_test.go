package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

// The closed form of P(Γ − Φ ≤ d) against the share of a fine grid of the
// rectangle, inside, at and beyond its corners, and with either width 0.
func TestCdfGammaMinusPhi(t *testing.T) {
	grid := func(d, g, p float64) float64 {
		const n = 1000
		var in int
		for i := range n {
			for j := range n {
				if g*(float64(i)+0.5)/n-p*(float64(j)+0.5)/n <= d {
					in++
				}
			}
		}
		return float64(in) / (n * n)
	}
	for _, c := range []struct{ g, p float64 }{{0.5, 1.333}, {2, 0.7}, {1, 1}} {
		for _, d := range []float64{-2, -c.p, -c.p + 0.1, -0.3, 0, 0.2, c.g - 0.05, c.g, 3} {
			got, want := cdfGammaMinusPhi(d, c.g, c.p), grid(d, c.g, c.p)
			if math.Abs(got-want) > 2e-3 {
				t.Errorf("g %v, p %v, d %v: %v, the grid says %v", c.g, c.p, d, got, want)
			}
		}
	}
	if got := cdfGammaMinusPhi(-0.25, 0, 1); math.Abs(got-0.75) > 1e-12 {
		t.Errorf("no granularity: P(−Φ ≤ −0.25) = %v, want 0.75", got)
	}
	if got := cdfGammaMinusPhi(0.25, 1, 0); math.Abs(got-0.25) > 1e-12 {
		t.Errorf("no heartbeat: P(Γ ≤ 0.25) = %v, want 0.25", got)
	}
}

// With a constant handover h and no granularity, the failover's quantile
// q is T − (1−q)·T/3 + h exactly; with a granularity it matches a seeded
// simulation of the same sum.
func TestFailoverQuantile(t *testing.T) {
	const tt, h = 4 * time.Second, 3 * time.Millisecond
	hv := Handover{Min: h, P50: h, P90: h, P99: h, Max: h}
	for _, q := range []float64{0.1, 0.5, 0.99} {
		got := failoverQuantile(tt, tt/3, 0, hv, q)
		want := tt - time.Duration((1-q)*float64(tt/3)) + h
		if d := got - want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("q %v: %v, want %v", q, got, want)
		}
	}
	spread := Handover{Min: time.Millisecond, P50: 4 * time.Millisecond, P90: 20 * time.Millisecond, P99: 80 * time.Millisecond, Max: 200 * time.Millisecond}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 400000
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(tt) - rng.Float64()*float64(tt/3) + rng.Float64()*float64(500*time.Millisecond) + handoverQuantile(spread, rng.Float64())
	}
	slices.Sort(xs)
	for _, q := range []float64{0.5, 0.99} {
		got, want := float64(failoverQuantile(tt, tt/3, 500*time.Millisecond, spread, q)), xs[int(q*n)]
		if math.Abs(got-want) > 0.002*want {
			t.Errorf("q %v: %v, the simulation says %v", q, time.Duration(got), time.Duration(want))
		}
	}
}

// handoverAt is the sweep's handover at n candidates: 1 ms × √n.
func handoverAt(n int) time.Duration { return time.Duration(1e6 * math.Sqrt(float64(n))) }

// failoverRun is a failover run on kind killing its leaders by kill, each
// variant's handover at each candidate count handoverAt's, with one
// notification a failover (fair) or n−1 (naive).
func failoverRun(t *testing.T, id string, kind backends.Kind, kill string, params map[string]string, counts []int, variants ...string) *results.Run {
	t.Helper()
	p := map[string]string{"kill": kill}
	for k, v := range params {
		p[k] = v
	}
	run := &results.Run{ID: id, ClusterMode: "local", Config: results.Config{Workload: "failover", Params: p}}
	for _, v := range variants {
		for _, n := range counts {
			notify := 1.0
			if v == "naive" {
				notify = float64(n - 1)
			}
			run.Results = append(run.Results, results.Result{Workload: "failover", Variant: v, Backend: kind, Clients: n,
				Unit: figures.Failover, Ops: results.Ops{Succeeded: 20},
				Latency: map[figures.Latency]*results.Histogram{figures.LatencyFailover: testresults.Constant(t, 20, handoverAt(n))},
				PerOp: map[string]float64{figures.WatchEvents.Key: notify, figures.ServerWatchEvents.Key: notify,
					figures.Requests.Key: 2 * notify, figures.ServerRequests.Key: 3 * notify}})
		}
	}
	return run
}

// Between the measured counts the handover is read on log-log axes, the
// failover is the model's sum with it, crash runs are left out of the
// basis, and every variant is shown.
func TestPredictFailover(t *testing.T) {
	runs := []*results.Run{
		failoverRun(t, "sweep", backends.ZooKeeper, "close", nil, []int{10, 40}, "fair", "naive"),
		failoverRun(t, "crash", backends.ZooKeeper, "crash", map[string]string{"session_timeout": "4s"}, []int{20}, "fair"),
	}
	ask := FailoverAsk{Workload: "failover", Variant: "fair", Candidates: 20, Timeout: 4 * time.Second, Tick: 500 * time.Millisecond, TickFrom: TickGiven}
	ans, err := PredictFailover(runs, ask)
	if err != nil {
		t.Fatal(err)
	}
	p := ans.Asked
	h := handoverAt(20)
	if d := p.Handover.P50 - h; d < -h/100 || d > h/100 {
		t.Errorf("handover p50 %v, want %v (√n read exactly on log-log axes)", p.Handover.P50, h)
	}
	if want := failoverQuantile(4*time.Second, 4*time.Second/3, 500*time.Millisecond, p.Handover, 0.5); p.P50 != want {
		t.Errorf("failover p50 %v, want %v", p.P50, want)
	}
	if p.Least != 4*time.Second-4*time.Second/3+p.Handover.Min || p.Most != 4500*time.Millisecond+p.Handover.Max {
		t.Errorf("bounds %v to %v", p.Least, p.Most)
	}
	if !(p.Least < p.P50 && p.P50 < p.P99 && p.P99 < p.Most) {
		t.Errorf("p50 %v and p99 %v not inside the bounds %v to %v", p.P50, p.P99, p.Least, p.Most)
	}
	if len(ans.Others) != 1 || ans.Others[0].Ask.Variant != "naive" || math.Abs(ans.Others[0].Counts.ServerNotifications-19) > 0.5 {
		t.Errorf("others %+v", ans.Others)
	}
	if !slices.ContainsFunc(ans.Left, func(s string) bool { return strings.Contains(s, "run crash") && strings.Contains(s, "kill crash") }) {
		t.Errorf("the crash run is not listed as left out: %v", ans.Left)
	}
	var b strings.Builder
	if err := ans.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"failover plan: zookeeper fair, 20 candidates", "bounds: every failover between", "give --target", "model error:"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the plan does not say %q:\n%s", want, b.String())
		}
	}
}

// The longest timeout meets the target and the next step misses it.
func TestFailoverLongestTimeout(t *testing.T) {
	runs := []*results.Run{failoverRun(t, "sweep", backends.ZooKeeper, "close", nil, []int{10, 40}, "fair")}
	ask := FailoverAsk{Workload: "failover", Variant: "fair", Candidates: 20, Timeout: 4 * time.Second, Tick: 500 * time.Millisecond, TickFrom: TickGiven,
		Percentile: 99, Bound: 3 * time.Second}
	ans, err := PredictFailover(runs, ask)
	if err != nil {
		t.Fatal(err)
	}
	p := ans.Asked
	if p.Meets || p.LongestTimeout == 0 {
		t.Fatalf("meets %v, longest %v: 4 s sessions miss 3 s and a shorter one meets it", p.Meets, p.LongestTimeout)
	}
	p99 := func(tt time.Duration) time.Duration {
		return failoverQuantile(tt, tt/3, 500*time.Millisecond, p.Handover, 0.99)
	}
	if p99(p.LongestTimeout) > ask.Bound || p99(p.LongestTimeout+100*time.Millisecond) <= ask.Bound {
		t.Errorf("longest %v: p99 %v there, %v a step on, bound %v", p.LongestTimeout, p99(p.LongestTimeout), p99(p.LongestTimeout+100*time.Millisecond), ask.Bound)
	}
}

// What the plan refuses, each with why.
func TestPredictFailoverRefuses(t *testing.T) {
	zk := []*results.Run{failoverRun(t, "sweep", backends.ZooKeeper, "close", nil, []int{10, 40}, "fair")}
	etcd := []*results.Run{failoverRun(t, "sweep", backends.Etcd, "close", nil, []int{10, 40}, "fair")}
	base := FailoverAsk{Workload: "failover", Variant: "fair", Candidates: 20, Timeout: 4 * time.Second, Tick: 500 * time.Millisecond, TickFrom: TickGiven}
	for _, c := range []struct {
		name string
		runs []*results.Run
		edit func(*FailoverAsk)
		want string
	}{
		{"beyond twice the counts", zk, func(a *FailoverAsk) { a.Candidates = 100 }, "beyond"},
		{"one candidate", zk, func(a *FailoverAsk) { a.Candidates = 1 }, "at least 2"},
		{"no timeout", zk, func(a *FailoverAsk) { a.Timeout = 0 }, "--session-timeout"},
		{"a session the ensemble does not grant", zk, func(a *FailoverAsk) { a.Timeout = 900 * time.Millisecond }, "grants sessions"},
		{"a tick on etcd", etcd, func(*FailoverAsk) {}, "--tick is a ZooKeeper"},
		{"a p90 target", zk, func(a *FailoverAsk) { a.Percentile, a.Bound = 90, time.Second }, "p50 or p99"},
		{"a variant not measured", zk, func(a *FailoverAsk) { a.Variant = "native" }, "no usable"},
		{"only crash runs", []*results.Run{failoverRun(t, "c", backends.ZooKeeper, "crash", nil, []int{10}, "fair")}, func(*FailoverAsk) {}, "kill crash"},
	} {
		ask := base
		c.edit(&ask)
		if _, err := PredictFailover(c.runs, ask); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	// etcd keeps whole seconds: 2.5 s is 3 s.
	ask := base
	ask.Tick, ask.TickFrom, ask.Timeout = 0, "", 2500*time.Millisecond
	ans, err := PredictFailover(etcd, ask)
	if err != nil {
		t.Fatal(err)
	}
	if p := ans.Asked; p.Timeout != 3*time.Second || p.Granularity != EtcdExpiryCheck {
		t.Errorf("etcd: timeout %v, granularity %v", p.Timeout, p.Granularity)
	}
}

// The validation compares with a crash run at the point's timeout and
// refuses a run that killed its leaders otherwise or ran other sessions.
func TestValidateFailover(t *testing.T) {
	runs := []*results.Run{failoverRun(t, "sweep", backends.ZooKeeper, "close", nil, []int{10, 40}, "fair")}
	ask := FailoverAsk{Workload: "failover", Variant: "fair", Candidates: 20, Timeout: 4 * time.Second, Tick: 500 * time.Millisecond, TickFrom: TickGiven}
	ans, err := PredictFailover(runs, ask)
	if err != nil {
		t.Fatal(err)
	}
	p := ans.Asked
	crash := failoverRun(t, "v", backends.ZooKeeper, "crash", map[string]string{"session_timeout": "4s"}, []int{20}, "fair")
	crash.Results[0].Latency[figures.LatencyFailover] = testresults.Constant(t, 20, 3500*time.Millisecond)
	v, err := ValidateFailover(p, crash)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range v.Checks {
		if c.Figure == "failover p50 (ms)" {
			found = true
			if want := (Millis(p.P50) - 3500) / 3500; math.Abs(c.Error-want) > 1e-3 || math.Abs(c.Measured-3500) > 3500*0.01 {
				t.Errorf("p50 check %+v, want error %v", c, want)
			}
		}
	}
	if !found {
		t.Errorf("no failover p50 check: %+v", v.Checks)
	}
	for _, bad := range []*results.Run{
		failoverRun(t, "close", backends.ZooKeeper, "close", map[string]string{"session_timeout": "4s"}, []int{20}, "fair"),
		failoverRun(t, "other", backends.ZooKeeper, "crash", map[string]string{"session_timeout": "6s"}, []int{20}, "fair"),
		failoverRun(t, "fewer", backends.ZooKeeper, "crash", map[string]string{"session_timeout": "4s"}, []int{10}, "fair"),
	} {
		if _, err := ValidateFailover(p, bad); err == nil {
			t.Errorf("run %s: validated", bad.ID)
		}
	}
}
