package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

func hist(t *testing.T, ds ...time.Duration) *results.Histogram {
	t.Helper()
	rec := results.NewRecorder()
	for _, d := range ds {
		results.Record(rec, d)
	}
	h, err := results.NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestCasesMergeRepeatsAcrossRuns(t *testing.T) {
	ms := time.Millisecond
	a := &results.Run{Results: []results.Result{
		{Workload: "lock", Backend: backends.Etcd, Variant: "fair", Clients: 8, Repeat: 0, Elapsed: time.Second, Throughput: 100,
			Ops: results.Ops{Succeeded: 100}, PerOp: map[string]float64{"watch_events": 1},
			Server: backends.Metrics{backends.MetricWrites: 300}, Latency: map[figures.Latency]*results.Histogram{"acquire": hist(t, ms, 2*ms)}},
		{Workload: "lock", Backend: backends.Etcd, Variant: "naive", Clients: 8, Elapsed: time.Second, Throughput: 50},
		{Workload: "lock", Backend: backends.Etcd, Variant: "fair", Clients: 2, Elapsed: time.Second, Throughput: 10},
	}}
	b := &results.Run{Results: []results.Result{
		{Workload: "lock", Backend: backends.Etcd, Variant: "fair", Clients: 8, Repeat: 1, Elapsed: time.Second, Throughput: 200,
			Ops: results.Ops{Succeeded: 200}, PerOp: map[string]float64{"watch_events": 3, "server_writes": 5},
			Latency: map[figures.Latency]*results.Histogram{"acquire": hist(t, 3*ms, 4*ms), "handoff": hist(t, ms)}},
		{Workload: "barrier", Backend: backends.ZooKeeper, Variant: "native", Clients: 4},
	}}
	cases := Cases([]*results.Run{a, b})
	var keys []string
	for _, c := range cases {
		keys = append(keys, c.Key.String())
	}
	want := []string{"barrier/zookeeper/native/N=4", "lock/etcd/naive/N=8", "lock/etcd/fair/N=2", "lock/etcd/fair/N=8"}
	if !slices.Equal(keys, want) {
		t.Fatalf("cases %v, want %v", keys, want)
	}
	c := cases[3]
	if c.Repeats() != 2 || c.Succeeded() != 300 {
		t.Fatalf("repeats %d, succeeded %d", c.Repeats(), c.Succeeded())
	}
	if v, ok := c.Throughput(); !ok || v != 150 {
		t.Errorf("throughput %v %v, want the mean 150", v, ok)
	}
	if v, ok := c.PerOp("watch_events"); !ok || v != 2 {
		t.Errorf("watch events %v, want 2", v)
	}
	// server_writes: repeat 0 derives 300/100 from its counter, repeat 1
	// reports 5: the mean is 4.
	if v, ok := c.PerOp("server_writes"); !ok || v != 4 {
		t.Errorf("server writes %v %v, want 4", v, ok)
	}
	if _, ok := c.PerOp("server_reads"); ok {
		t.Error("server reads reported though nobody measured them")
	}
	if v, ok := c.ServerRate(backends.MetricWrites); !ok || v != 300 {
		t.Errorf("server write rate %v", v)
	}
	if names := c.LatencyNames(); !slices.Equal(names, []figures.Latency{"acquire", "handoff"}) {
		t.Errorf("latency names %v", names)
	}
	h, err := c.Latency("acquire")
	if err != nil || h.TotalCount() != 4 {
		t.Fatalf("merged histogram %v, %v", h, err)
	}
	if p, ok, err := c.Quantile("acquire", 100); err != nil || !ok || math.Abs(float64(p-4*ms)) > float64(10*time.Microsecond) {
		t.Errorf("max of merged = %v", p)
	}
	if _, ok, _ := c.Quantile("enter", 50); ok {
		t.Error("quantile of an absent histogram")
	}
}

// TestCasesKeepRunsSetApart: runs given together pool a case as repeats
// only where they were set alike; a 1 KB and a 64 KB config sweep, or a
// closed-loop sweep and an open-loop run, stay cases of their own, named
// by what set them apart, and a bound (step_timeout) does not set runs
// apart.
func TestCasesKeepRunsSetApart(t *testing.T) {
	config := func(size, step string, tput float64, clients ...int) *results.Run {
		r := &results.Run{Config: results.Config{Workload: "config", Params: map[string]string{"size": size, "step_timeout": step, "cluster": "local"}}}
		for _, n := range clients {
			r.Results = append(r.Results, results.Result{Workload: "config", Backend: backends.Etcd, Variant: "persistent",
				Clients: n, Elapsed: time.Second, Throughput: tput})
		}
		return r
	}
	lock := func(rate float64, hold time.Duration, n int) *results.Run {
		return &results.Run{Config: results.Config{Workload: "lock", Rate: rate, Hold: hold},
			Results: []results.Result{{Workload: "lock", Backend: backends.ZooKeeper, Variant: "fair", Clients: n, Elapsed: time.Second, Throughput: 10}}}
	}
	keysOf := func(cases []*Case) []string {
		var out []string
		for _, c := range cases {
			out = append(out, fmt.Sprintf("%s x%d", c.Key, c.Repeats()))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		runs []*results.Run
		want []string
	}{
		{"alike", []*results.Run{config("1024", "1m0s", 2, 10), config("1024", "30s", 4, 10)},
			[]string{"config/etcd/persistent/N=10 x2"}},
		// Sizes in order of their numbers, not their text.
		{"sizes", []*results.Run{config("65536", "1m0s", 4, 10), config("1024", "1m0s", 2, 10, 100), config("524288", "1m0s", 4, 10)},
			[]string{"config/etcd/persistent (size=1024)/N=10 x1", "config/etcd/persistent (size=1024)/N=100 x1",
				"config/etcd/persistent (size=65536)/N=10 x1", "config/etcd/persistent (size=524288)/N=10 x1"}},
		// Apart in size but no case in both: nothing to keep apart.
		{"no case in both", []*results.Run{config("1024", "1m0s", 2, 10), config("65536", "1m0s", 4, 100)},
			[]string{"config/etcd/persistent/N=10 x1", "config/etcd/persistent/N=100 x1"}},
		{"loops", []*results.Run{lock(0, 0, 8), lock(20, 50*time.Millisecond, 8), lock(0, 0, 8)},
			[]string{"lock/zookeeper/fair (closed loop, hold 0s)/N=8 x2", "lock/zookeeper/fair (open loop 20/s, hold 50ms)/N=8 x1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := keysOf(Cases(tc.runs)); !slices.Equal(got, tc.want) {
				t.Errorf("cases %q, want %q", got, tc.want)
			}
		})
	}
	// The USL fits read their series as the cases do.
	fits := FitUSLs([]*results.Run{lock(0, 0, 8), lock(0, 50*time.Millisecond, 8)})
	var names []string
	for _, f := range fits {
		names = append(names, f.VariantLabel())
	}
	if !slices.Equal(names, []string{"fair (hold 0s)", "fair (hold 50ms)"}) {
		t.Errorf("USL series %q, want one a hold", names)
	}
}

// TestCaseDeclarations: a case reads its unit, class and latency order from
// its results: what the workload recorded, or, for a result that recorded
// none (older files), what its names meant then.
func TestCaseDeclarations(t *testing.T) {
	h := &results.Histogram{}
	recorded := &results.Result{Workload: "semaphore", Variant: "ticket", Unit: "permit", Class: figures.HerdFree,
		Latencies: []figures.Latency{"wait", "acquire"}, Latency: map[figures.Latency]*results.Histogram{"acquire": h, "wait": h, "zeta": h}}
	old := &results.Result{Workload: "election-failover", Variant: "curator",
		Latency: map[figures.Latency]*results.Histogram{"handoff": h, "failover": h}}
	for _, tc := range []struct {
		r       *results.Result
		unit    figures.Unit
		class   figures.Class
		primary figures.Latency
		names   []figures.Latency
	}{
		{recorded, "permit", figures.HerdFree, "wait", []figures.Latency{"wait", "acquire", "zeta"}},
		{old, figures.Failover, figures.Baseline, "failover", []figures.Latency{"failover", "handoff"}},
	} {
		c := Cases([]*results.Run{{Results: []results.Result{*tc.r}}})[0]
		if c.Unit() != tc.unit || c.Class != tc.class || c.PrimaryLatency() != tc.primary || !slices.Equal(c.LatencyNames(), tc.names) {
			t.Errorf("%s/%s: unit %q class %q primary %q names %v; want %q %q %q %v", tc.r.Workload, tc.r.Variant,
				c.Unit(), c.Class, c.PrimaryLatency(), c.LatencyNames(), tc.unit, tc.class, tc.primary, tc.names)
		}
	}
}

// TestResultPerOp: a server figure missing from PerOp (files from before it
// was recorded) is the server counter per successful operation, except
// where the server count is partial, which is never divided.
func TestResultPerOp(t *testing.T) {
	r := &results.Result{
		Ops:    results.Ops{Issued: 10, Succeeded: 10},
		PerOp:  map[string]float64{figures.WatchEvents.Key: 2},
		Server: backends.Metrics{backends.MetricWrites: 30},
	}
	if v, ok := ResultPerOp(r, figures.WatchEvents.Key); !ok || v != 2 {
		t.Errorf("watch events %v %v", v, ok)
	}
	if v, ok := ResultPerOp(r, figures.ServerWrites.Key); !ok || v != 3 {
		t.Errorf("server writes from the counter: %v %v, want 3", v, ok)
	}
	if _, ok := ResultPerOp(r, figures.ServerReads.Key); ok {
		t.Error("server reads were not scraped")
	}
	if _, ok := ResultPerOp(r, figures.WastedWakeups.Key); ok {
		t.Error("a client figure has no server fallback")
	}
	r.ServerPartial = true
	if _, ok := ResultPerOp(r, figures.ServerWrites.Key); ok {
		t.Error("a partial server count was divided per operation")
	}
}

// TestNotesExplainOldFiles: a bare disagreement note in a file written
// before the documented causes were modelled is read with the model applied
// to the counts the file holds: unexplained where the file has no witness
// of the cause, known where it has one that accounts for the excess; other
// notes are left as they are.
func TestNotesExplainOldFiles(t *testing.T) {
	bare := "client and server disagree on watch events by more than 5%: client 5579, server 18242 (zkbench_server_watch_events)"
	r := &results.Result{
		Backend: backends.Etcd,
		Client:  results.ClientCounts{WatchEvents: 5579},
		Server:  backends.Metrics{backends.MetricWatchEvents: 18242},
		Notes:   []string{bare, "200 acquisitions were still waiting"},
	}
	got := Notes(r)
	if len(got) != 2 || got[0] != "client and server disagree on watch events by more than 5%: client 5579, server 18242, "+
		"excess 12663, no client-side witness in this file (zkbench_server_watch_events); UNEXPLAINED by the documented causes "+
		"(docs/figures.md): a cause of this backend, whose witness this file does not hold" || got[1] != r.Notes[1] {
		t.Errorf("notes %q", got)
	}
	if r.Notes[0] != bare {
		t.Error("Notes changed the result")
	}
	r.Client.Witness = &backends.Witness{WireWatchEvents: 18100}
	if got := Notes(r); !strings.HasPrefix(got[0], "client and server disagree on watch events by more than 5%: client 5579, server 18242, "+
		"excess 12663, predicted 12521 ± 912 (zkbench_server_watch_events); known difference (docs/figures.md): etcd counts") {
		t.Errorf("with the witness: %q", got[0])
	}
	r.Client.Witness = nil
	r.Backend = backends.ZooKeeper // no documented cause: the note stays a finding
	if got := Notes(r); got[0] != bare {
		t.Errorf("zookeeper note %q", got[0])
	}
}
