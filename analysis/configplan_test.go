package analysis

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

// fanOut is a config center whose every update reaches its last watcher
// after c·W^0.5·(1 + S/64KiB)·R^-0.25, one the model reads exactly: a
// power law in watchers and rate, a line in size.
func fanOut(w, size int, rate float64) time.Duration {
	return time.Duration(2e6 * math.Sqrt(float64(w)) * (1 + float64(size)/65536) * math.Pow(rate, -0.25))
}

// fanOutRun is one run of the config workload at size and rate, its
// variants at each watcher count measured as fanOut says, with one server
// notification and size+100 server bytes a watcher and update.
func fanOutRun(t *testing.T, id string, size int, rate float64, watchers []int, variants ...string) *results.Run {
	t.Helper()
	run := &results.Run{ID: id, ClusterMode: "local", Config: results.Config{Workload: "config", Rate: rate,
		Params: map[string]string{"size": strconv.Itoa(size), "poll": "1s"}}, Environment: results.Environment{CPUs: 2}}
	for _, v := range variants {
		for _, w := range watchers {
			notify := float64(w)
			if v == "polling" {
				notify = 0
			}
			// The servers' CPU: 0.1 s a second idle, 0.002 s a watcher
			// and update.
			cpu := (0.1 + 0.002*float64(w)*rate) * 100 / rate
			run.Results = append(run.Results, results.Result{Workload: "config", Variant: v, Backend: backends.Etcd, Clients: w,
				Unit: figures.Update, Throughput: rate, Ops: results.Ops{Succeeded: 100},
				Cost:    results.Cost{ServerCPUSeconds: cpu, ServerCostMeasured: true},
				Latency: map[figures.Latency]*results.Histogram{figures.LatencyPropagateLastStart: testresults.Constant(t, 100, fanOut(w, size, rate))},
				PerOp: map[string]float64{figures.ServerWatchEvents.Key: notify, figures.WatchEvents.Key: notify,
					figures.ServerBytesSent.Key: float64(w) * float64(size+100)}})
		}
	}
	return run
}

func fanOutSweep(t *testing.T) []*results.Run {
	var runs []*results.Run
	for _, rate := range []float64{2, 10} {
		for _, size := range []int{1024, 16384} {
			runs = append(runs, fanOutRun(t, "sweep-"+strconv.Itoa(size)+"-r"+num(rate), size, rate, []int{10, 25, 60}, "one-shot", "persistent", "polling"))
		}
	}
	return runs
}

// Between the measured watcher counts, sizes and rates, the plan reads a
// fan-out of the model's form exactly, with its counts times the rate, and
// names its basis.
func TestPredictConfigReadsBetweenPoints(t *testing.T) {
	runs := fanOutSweep(t)
	ask := ConfigAsk{Workload: "config", Variant: "one-shot", Watchers: 40, Size: 4096, Rate: 5, Percentile: 99, Bound: 50 * time.Millisecond}
	ans, err := PredictConfig(runs, ask)
	if err != nil {
		t.Fatal(err)
	}
	p := ans.Asked
	want := fanOut(40, 4096, 5)
	if d := math.Abs(float64(p.LastP99-want)) / float64(want); d > 0.01 {
		t.Errorf("last p99 %v, want %v (the model's form read exactly)", p.LastP99, want)
	}
	if u := 5 * p.LastMean.Seconds(); math.Abs(p.Utilisation-u) > 1e-9 {
		t.Errorf("utilisation %v, want rate × mean %v", p.Utilisation, u)
	}
	if got := p.load("notifications/s (server)"); math.Abs(got-200) > 1 {
		t.Errorf("server notifications/s %v, want 40 watchers × 5 updates/s", got)
	}
	if got, want := p.load("bytes/s (server)"), 40*5*float64(4096+100); math.Abs(got-want) > 0.01*want {
		t.Errorf("server bytes/s %v, want %v", got, want)
	}
	if len(p.Basis) != 8 || p.Extrapolated != "" {
		t.Errorf("basis %d points (want 2 watcher counts × 2 sizes × 2 rates), extrapolated %q", len(p.Basis), p.Extrapolated)
	}
	if len(ans.Others) != 1 || ans.Others[0].Ask.Variant != "persistent" {
		t.Errorf("others %v, want persistent alone (polling watches nothing)", ans.Others)
	}
	if len(p.Resources) != 2 || p.Resources[0].Capacity > p.Resources[1].Capacity || !slices.ContainsFunc(p.Resources, func(r Resource) bool {
		return r.Name == "fan-out (every watcher has an update before the next)" && math.Abs(r.Capacity-1/p.LastMean.Seconds()) < 1e-9
	}) {
		t.Errorf("resources %+v, want the fan-out (1 / mean propagation) and the CPU, the first to saturate first", p.Resources)
	}
	// The target holds up to where the fan-out's p99 passes 50 ms at
	// 4KB and 5 updates/s.
	last := 0
	for w := 1; w <= 120; w++ {
		if fanOut(w, 4096, 5) <= 50*time.Millisecond {
			last = w
		}
	}
	if p.MaxWatchers < last*9/10 || p.MaxWatchers > last {
		t.Errorf("max watchers %d, want about %d (the search steps by 5%%)", p.MaxWatchers, last)
	}
	var b strings.Builder
	if err := ans.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"last watcher p99 (ms)", "fan-out utilisation", "first to saturate: server CPU", "model error: "} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("plan text lacks %q:\n%s", s, b.String())
		}
	}
}

// The servers' CPU is read as an idle part and a part an update, from
// the CPU a second at the two rates, and its capacity is the cores left
// over the part an update.
func TestPredictConfigCPU(t *testing.T) {
	ask := ConfigAsk{Workload: "config", Variant: "one-shot", Watchers: 25, Size: 1024, Rate: 5, Percentile: 99, Bound: 50 * time.Millisecond}
	ans, err := PredictConfig(fanOutSweep(t), ask)
	if err != nil {
		t.Fatal(err)
	}
	p := ans.Asked
	if got, want := p.load("server CPU s/s"), 0.1+0.05*5; math.Abs(got-want) > 1e-6 {
		t.Errorf("server CPU %v s/s, want idle 0.1 + 0.05 an update × 5", got)
	}
	i := slices.IndexFunc(p.Resources, func(r Resource) bool { return strings.HasPrefix(r.Name, "server CPU") })
	if i < 0 || math.Abs(p.Resources[i].Capacity-(2-0.1)/0.05) > 1e-6 {
		t.Errorf("resources %+v, want server CPU full at (2 cores − 0.1) / 0.05 = 38 updates/s", p.Resources)
	}
}

// The most watchers is read up from the asked count when it meets the
// target, down from it when it does not.
func TestPredictConfigMostWatchers(t *testing.T) {
	runs := fanOutSweep(t)
	// At 4KB and 5 updates/s the fan-out passes 20 ms between 40 and 50
	// watchers.
	last := 0
	for w := 5; w <= 120; w++ {
		if fanOut(w, 4096, 5) <= 20*time.Millisecond {
			last = w
		}
	}
	for _, from := range []int{10, 100} {
		ask := ConfigAsk{Workload: "config", Variant: "one-shot", Watchers: from, Size: 4096, Rate: 5, Percentile: 99, Bound: 20 * time.Millisecond}
		ans, err := PredictConfig(runs, ask)
		if err != nil {
			t.Fatal(err)
		}
		if got := ans.Asked.MaxWatchers; got < last*9/10 || got > last {
			t.Errorf("from %d watchers: most %d, want about %d", from, got, last)
		}
	}
}

// A point beyond twice the measured range is refused, within it marked
// EXTRAPOLATED; a variant that watches nothing is refused with why.
func TestPredictConfigRefuses(t *testing.T) {
	runs := fanOutSweep(t)
	ask := ConfigAsk{Workload: "config", Variant: "persistent", Watchers: 100, Size: 1024, Rate: 2, Percentile: 99, Bound: 50 * time.Millisecond}
	ans, err := PredictConfig(runs, ask)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ans.Asked.Extrapolated, "EXTRAPOLATED: 100 watchers outside") {
		t.Errorf("100 watchers past 60 measured: extrapolated %q", ans.Asked.Extrapolated)
	}
	for _, c := range []struct {
		change func(*ConfigAsk)
		want   string
	}{
		{func(a *ConfigAsk) { a.Watchers = 200 }, "beyond 2x the watcher counts"},
		{func(a *ConfigAsk) { a.Size = 64 << 10 }, "beyond 2x the sizes"},
		{func(a *ConfigAsk) { a.Variant = "polling" }, "watches nothing"},
		{func(a *ConfigAsk) { a.Variant = "native" }, "no usable config case"},
		{func(a *ConfigAsk) { a.Percentile = 90 }, "p50 or the p99"},
		{func(a *ConfigAsk) { a.Rate = 0 }, "give --rate"},
		{func(a *ConfigAsk) { a.Rate = math.NaN() }, "give --rate"},
		{func(a *ConfigAsk) { a.Rate = math.Inf(1) }, "give --rate"},
		{func(a *ConfigAsk) { a.Rate = 25 }, "beyond 2x the measured rates"},
	} {
		a := ask
		c.change(&a)
		if _, err := PredictConfig(runs, a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", a, err, c.want)
		}
	}
}

// Validation compares the last watcher's propagation and the counts with
// the run of the point, and refuses a run of another size or rate.
func TestValidateConfig(t *testing.T) {
	runs := fanOutSweep(t)
	ask := ConfigAsk{Workload: "config", Variant: "one-shot", Watchers: 40, Size: 4096, Rate: 5, Percentile: 99, Bound: 50 * time.Millisecond}
	ans, err := PredictConfig(runs, ask)
	if err != nil {
		t.Fatal(err)
	}
	run := fanOutRun(t, "point", 4096, 5, []int{40}, "one-shot")
	v, err := ValidateConfig(ans.Asked, run)
	if err != nil {
		t.Fatal(err)
	}
	figs := map[string]Check{}
	for _, c := range v.Checks {
		figs[c.Figure] = c
	}
	for _, f := range []string{"last watcher p50 (ms)", "last watcher p99 (ms)", "updates/s", "notifications/s (server)", "bytes/s (server)"} {
		c, ok := figs[f]
		if !ok || math.Abs(c.Error) > 0.02 {
			t.Errorf("%s: %+v, want it compared within 2%%", f, c)
		}
	}
	for _, bad := range []*results.Run{fanOutRun(t, "other-size", 1024, 5, []int{40}, "one-shot"), fanOutRun(t, "other-rate", 4096, 2, []int{40}, "one-shot")} {
		if _, err := ValidateConfig(ans.Asked, bad); err == nil {
			t.Errorf("run %s validated a prediction of another point", bad.ID)
		}
	}
}
