package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// shardSweep is a lock sweep on the servers at endpoints, for shards.
func shardSweep(kind backends.Kind, endpoints []string, variants []string, clients int) Config {
	return Config{
		Backend: kind, Workload: "lock", Variants: variants, Clients: []int{clients},
		Repeat: 1, Duration: 1200 * time.Millisecond, Warmup: 200 * time.Millisecond,
		Servers: Servers{Nodes: 1, Endpoints: endpoints, LeaseTTL: 5 * time.Second, SessionTimeout: 4 * time.Second,
			PreflightTimeout: 10 * time.Second},
	}
}

// runShards runs the shards of cfg given in indices (of count) at once, in
// this process, and returns their runs by index (nil for one that failed)
// with their errors.
func runShards(t *testing.T, cfg Config, runID string, count int, indices []int, timeout time.Duration) ([]*results.Run, []error) {
	t.Helper()
	runs := make([]*results.Run, count)
	errs := make([]error, count)
	logs := make([]bytes.Buffer, count)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, i := range indices {
		r, err := New(cfg, WithRunID(runID), WithShard(i, count, timeout), WithOutput(t.TempDir()), WithProgress(&logs[i], false))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], errs[i] = r.Run(ctx)
			if errs[i] == nil {
				// The file on disk is what merge reads.
				runs[i], errs[i] = results.ReadFile(r.Path())
			}
		}()
	}
	wg.Wait()
	for _, i := range indices {
		t.Logf("shard %d:\n%s", i, logs[i].String())
	}
	return runs, errs
}

// TestShardsHerdSpansShards runs a naive and a fair lock case as two shards
// on one namespace, on ZooKeeper and on etcd, and merges them: the naive
// lock's herd is every client of both shards (a release wakes about all
// other clients, not only those of the releaser's shard), the fair lock
// wakes one, and the merged file reads like a run of one process.
func TestShardsHerdSpansShards(t *testing.T) {
	const clients = 16 // 8 a shard
	for _, tc := range []struct {
		kind      backends.Kind
		endpoints func(testing.TB) []string
	}{
		{backends.ZooKeeper, testcluster.ZooKeeperEndpoints},
		{backends.Etcd, testcluster.EtcdEndpoints},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			cfg := shardSweep(tc.kind, tc.endpoints(t), []string{"naive", "fair"}, clients)
			// The checks below need grants in every shard of every case, and
			// enough of them (casesWithoutGrants). A machine loaded enough
			// can give a 1.2 s case none (a cold test run beside two busy
			// loops: the naive case's shards ran 8 % and 19 % and waited for
			// a CPU 91 % of 2 cores, 0 grants): such a run is repeated with a
			// window three times as long, up to 10.8 s.
			var runs []*results.Run
			testcluster.Widen(t, cfg.Duration, func(window time.Duration) string {
				cfg.Duration = window
				var errs []error
				runs, errs = runShards(t, cfg, fmt.Sprintf("shards-%s-%dms", tc.kind, window.Milliseconds()), 2, []int{0, 1}, 30*time.Second)
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
				if idle := casesWithoutGrants(runs); len(idle) > 0 {
					return fmt.Sprintf("too few grants in %v", idle)
				}
				return ""
			})
			for i, run := range runs {
				if run.Shard == nil || run.Shard.Index != i || run.Shard.Count != 2 || run.Status != results.StatusComplete {
					t.Fatalf("shard %d: shard %+v, status %s %s", i, run.Shard, run.Status, run.StatusDetail)
				}
				for _, res := range run.Results {
					sc := res.Shard
					if sc == nil || sc.Clients != clients/2 || sc.FirstClient != i*clients/2 || res.Clients != clients || sc.Scraped != (i == 0) {
						t.Fatalf("shard %d %s: clients %d, shard %+v", i, res.Variant, res.Clients, sc)
					}
					if (res.Server != nil) != (i == 0) {
						t.Errorf("shard %d %s: server counters %v: only shard 0 scrapes", i, res.Variant, res.Server)
					}
				}
			}
			merged, err := results.Merge(runs)
			if err != nil {
				t.Fatal(err)
			}
			if err := merged.Validate(); err != nil {
				t.Fatal(err)
			}
			if merged.Status != results.StatusComplete || len(merged.Results) != 2 || merged.MergedShards != 2 {
				t.Fatalf("merged: status %s (%s), %d results", merged.Status, merged.StatusDetail, len(merged.Results))
			}
			got := map[string]results.Result{}
			for i, res := range merged.Results {
				got[res.Variant] = res
				var sum int64
				for _, run := range runs {
					sum += run.Results[i].Latency["acquire"].Count
				}
				if h := res.Latency["acquire"]; h == nil || h.Count != sum || h.Count != res.Ops.Succeeded {
					t.Errorf("%s: merged acquire histogram %+v: want the shards' %d values, one per grant (%d)", res.Variant, h, sum, res.Ops.Succeeded)
				}
				if res.Safety.Violations != 0 || res.Merged == nil || res.Merged.Sections == 0 || !res.Merged.SameClock {
					t.Fatalf("%s: safety %+v, merged %+v", res.Variant, res.Safety, res.Merged)
				}
				t.Logf("%s: %d grants, %.0f/s, watch events/op %.2f client | %.2f server, skew %v, notes %q",
					res.Variant, res.Ops.Succeeded, res.Throughput, res.PerOp["watch_events"], res.PerOp["server_watch_events"],
					res.Merged.Skew, res.Notes)
			}
			naive, fair := got["naive"], got["fair"]
			// A release wakes every waiter of both shards: about clients-1
			// per grant, where a herd confined to the releaser's shard
			// could not pass clients/2-1. (Below clients-1 when waiters
			// are still re-arming from the previous release on a loaded
			// machine; above it on etcd's server count, which also counts
			// events sent to watches being cancelled: docs/figures.md.)
			herdSpans := func(what string, w float64) {
				if w < 0.6*float64(clients-1) || w <= float64(clients/2) {
					t.Errorf("naive: %.2f %s watch events per grant, want about %d (every client of both shards but the holder), above one shard's %d; notes %q",
						w, what, clients-1, clients/2-1, naive.Notes)
				}
			}
			herdSpans("server", naive.PerOp["server_watch_events"])
			// ZooKeeper's clients see the whole herd too.
			if w := naive.PerOp["watch_events"]; tc.kind == backends.ZooKeeper {
				herdSpans("client", w)
				if w > float64(clients) {
					t.Errorf("naive: %.2f client watch events per grant, more than the %d clients", w, clients)
				}
			}
			if w := fair.PerOp["watch_events"]; w < 0.9 || w > 1.1 {
				t.Errorf("fair: %.2f watch events per grant, want 1.00", w)
			}
			if j := naive.Fairness.Jain; j <= 0 || j > 1 {
				t.Errorf("naive: Jain %v over both shards' clients", j)
			}
		})
	}
}

// minShardGrants is how many grants each case needs over its shards for the
// per-grant checks to mean something: the window's edges add or drop one
// watch event, a tenth of the fair lock's one a grant at ten grants.
const minShardGrants = 10

// casesWithoutGrants names the cases of runs (shards of one sweep) in which
// a shard was granted nothing or all of them fewer than minShardGrants.
func casesWithoutGrants(runs []*results.Run) []string {
	var idle []string
	for i := range runs[0].Results {
		var n int64
		short := false
		for _, run := range runs {
			n += run.Results[i].Ops.Succeeded
			short = short || run.Results[i].Ops.Succeeded == 0
		}
		if short || n < minShardGrants {
			idle = append(idle, fmt.Sprintf("%s (%d grants)", runs[0].Results[i].Variant, n))
		}
	}
	return idle
}

// TestShardMissing: a shard whose partner never comes fails its first case
// at the start barrier, within the shard timeout, and says so.
func TestShardMissing(t *testing.T) {
	cfg := shardSweep(backends.Etcd, testcluster.EtcdEndpoints(t), []string{"fair"}, 4)
	start := time.Now()
	runs, errs := runShards(t, cfg, "shards-missing", 2, []int{0}, 2*time.Second)
	took := time.Since(start)
	if runs[0] != nil || !errors.Is(errs[0], ErrShardMissing) || !strings.Contains(errs[0].Error(), "only 1 of the 2 shards reached the start barrier within 2s") {
		t.Fatalf("run %v, err %v: want ErrShardMissing", runs[0], errs[0])
	}
	if took > 30*time.Second {
		t.Errorf("the missing shard took %v to notice", took)
	}
	t.Logf("noticed after %v (shard timeout 2s)", took.Round(time.Millisecond))
}

// TestShardOverlapAcrossShards runs two real shards, then injects into
// shard 1's file a critical section that begins inside one of shard 0's
// (as a lock that let a client of each shard in at once would): each
// shard's own checker saw none; the merge finds it and names both.
func TestShardOverlapAcrossShards(t *testing.T) {
	cfg := shardSweep(backends.Etcd, testcluster.EtcdEndpoints(t), []string{"fair"}, 4)
	// The injection needs a section of shard 0 that lasted and a later one
	// of shard 1. A loaded machine can leave a 1.2 s window without them:
	// such a run is repeated with a window three times as long, twice at
	// most.
	var (
		runs        []*results.Run
		s0, s1      *results.ShardCase
		first, next int
	)
	testcluster.Widen(t, cfg.Duration, func(window time.Duration) string {
		cfg.Duration = window
		var errs []error
		runs, errs = runShards(t, cfg, fmt.Sprintf("shards-overlap-%dms", window.Milliseconds()), 2, []int{0, 1}, 30*time.Second)
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		s0, s1 = runs[0].Results[0].Shard, runs[1].Results[0].Shard
		// Shard 0's first section that lasted, and shard 1's first section
		// after it (by token), to be moved to begin in its middle.
		first, next = -1, -1
		for k := range s0.Sections.Len() {
			if s0.Sections.Exit[k] > s0.Sections.Enter[k] && (first < 0 || s0.Sections.Token[k] < s0.Sections.Token[first]) {
				first = k
			}
		}
		for k := range s1.Sections.Len() {
			if first >= 0 && s1.Sections.Token[k] > s0.Sections.Token[first] && (next < 0 || s1.Sections.Token[k] < s1.Sections.Token[next]) {
				next = k
			}
		}
		if first < 0 || next < 0 {
			return fmt.Sprintf("sections: %d and %d; no section of shard 0 (%d) followed by one of shard 1 (%d)",
				s0.Sections.Len(), s1.Sections.Len(), first, next)
		}
		return ""
	})
	enter, exit := s0.Base.Add(s0.Sections.Enter[first]), s0.Base.Add(s0.Sections.Exit[first])
	mid := enter.Add(exit.Sub(enter) / 2)
	d := s1.Sections.Exit[next] - s1.Sections.Enter[next]
	s1.Sections.Enter[next] = mid.Sub(s1.Base)
	s1.Sections.Exit[next] = s1.Sections.Enter[next] + d
	merged, err := results.Merge(runs)
	if err != nil {
		t.Fatal(err)
	}
	res := merged.Results[0]
	want := fmt.Sprintf("shard 1 client %d (token %d) entered", s1.Sections.Client[next], s1.Sections.Token[next])
	// (The section named is the one of shard 0 that ended last among those
	// with earlier tokens: the injected one's, or a later one's.)
	if res.Safety.Violations < 1 || !strings.Contains(strings.Join(res.Safety.Details, "\n"), want) ||
		!strings.Contains(strings.Join(res.Safety.Details, "\n"), "before shard 0 client") {
		t.Fatalf("safety %+v: want the injected overlap (%s)", res.Safety, want)
	}
	for _, run := range runs {
		if v := run.Results[0].Safety.Violations; v != 0 {
			t.Fatalf("a shard's own checker found %d violations: the injection is not across shards", v)
		}
	}
}

// TestShardRefuses: what a shard cannot do is refused before any server is
// touched.
func TestShardRefuses(t *testing.T) {
	remote := func(c *Config) { c.Servers.Endpoints = []string{"127.0.0.1:1"} }
	tests := []struct {
		name string
		edit func(*Config)
		opts []Option
		want string
	}{
		{"no run id", remote, []Option{WithShard(0, 2, 0)}, "give --run-id"},
		{"no endpoints", nil, []Option{WithShard(0, 2, 0), WithRunID("x")}, "give --endpoints"},
		{"index", remote, []Option{WithShard(2, 2, 0), WithRunID("x")}, "has shards 0 to 1"},
		{"workload", func(c *Config) { remote(c); c.Workload = "barrier" }, []Option{WithShard(0, 2, 0), WithRunID("x")}, "only the lock workload"},
		{"ops", func(c *Config) { remote(c); c.Ops = 10 }, []Option{WithShard(0, 2, 0), WithRunID("x")}, "--ops"},
		{"few clients", func(c *Config) { remote(c); c.Clients = []int{1} }, []Option{WithShard(0, 2, 0), WithRunID("x")}, "every shard needs at least one"},
		{"faults", remote, []Option{WithShard(0, 2, 0), WithRunID("x"), WithFaults(faultsOf(t, "latency:1ms@0s+1s")...)}, "faults"},
		{"no command", nil, []Option{WithLocalShards(2, 0, nil)}, "no command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sweep()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			_, err := New(cfg, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestShardGoneMidCase: a shard that does not reach a case's end barrier
// (here: one still measuring long after the other) leaves the case marked
// incomplete in the other's file, within the shard timeout; the merge says
// which case.
func TestShardGoneMidCase(t *testing.T) {
	eps := testcluster.EtcdEndpoints(t)
	short := shardSweep(backends.Etcd, eps, []string{"fair"}, 4)
	long := short
	long.Duration = 6 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	runs := make([]*results.Run, 2)
	errs := make([]error, 2)
	for i, cfg := range []Config{short, long} {
		r, err := New(cfg, WithRunID("shards-gone"), WithShard(i, 2, 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], errs[i] = r.Run(ctx)
		}()
	}
	// The long shard measures for 6 s, then waits 2 s at its end barrier:
	// about 10 s on a quiet machine; 60 s is what bounds a shard that
	// waits for its partner forever.
	start := time.Now()
	wg.Wait()
	took := time.Since(start)
	if took > 60*time.Second {
		t.Errorf("the shards took %v to end", took)
	}
	t.Logf("the shards ended after %v", took.Round(time.Millisecond))
	if errs[0] != nil || runs[0] == nil {
		t.Fatalf("shard 0: %v", errs[0])
	}
	sc := runs[0].Results[0].Shard
	if sc == nil || !strings.Contains(sc.Incomplete, "only 1 of the 2 shards reached the end barrier within 2s") ||
		!strings.Contains(strings.Join(runs[0].Results[0].Notes, "\n"), "case incomplete: shard missing") {
		t.Fatalf("shard 0's case: shard %+v, notes %q", sc, runs[0].Results[0].Notes)
	}
}

// TestShardsOpenLoop: in the open loop each shard paces its share of the
// rate, their schedules interleaved: together they keep the whole rate,
// and the merged latency (from each acquisition's scheduled time) holds
// every shard's grants.
func TestShardsOpenLoop(t *testing.T) {
	const rate = 40.0
	cfg := shardSweep(backends.Etcd, testcluster.EtcdEndpoints(t), []string{"fair"}, 8)
	cfg.Rate, cfg.Duration = rate, 2*time.Second
	start := time.Now()
	runs, errs := runShards(t, cfg, "shards-open", 2, []int{0, 1}, 30*time.Second)
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	merged, err := results.Merge(runs)
	if err != nil {
		t.Fatal(err)
	}
	res := merged.Results[0]
	// Each shard's schedule issues its half of the slots whoever serves
	// them, a count the pacer fixes however slow the machine: at least the
	// slots due in its measured window, at most those due while it ran
	// (slots of the warm-up still waiting count too). How many were
	// granted is the machine's: 12 a second in a loaded run, where the
	// lock could not keep up.
	for i, run := range runs {
		r := run.Results[0]
		lo, hi := int64(rate/2*r.Elapsed.Seconds())-2, int64(rate/2*wall.Seconds())+2
		if r.Ops.Issued < lo || r.Ops.Issued > hi {
			t.Errorf("shard %d: %d slots issued in a %v window of a %v run, want %d to %d (its half of %v/s)",
				i, r.Ops.Issued, r.Elapsed.Round(time.Millisecond), wall.Round(time.Millisecond), lo, hi, rate)
		}
	}
	if res.Ops.Succeeded == 0 || res.Ops.Issued != runs[0].Results[0].Ops.Issued+runs[1].Results[0].Ops.Issued {
		t.Errorf("open loop at %v/s over two shards: merged ops %+v, shards issued %d and %d; notes %q", rate, res.Ops,
			runs[0].Results[0].Ops.Issued, runs[1].Results[0].Ops.Issued, res.Notes)
	}
	t.Logf("open loop at %v/s over two shards: issued %d, granted %.1f/s in %v; notes %q", rate, res.Ops.Issued, res.Throughput, res.Elapsed.Round(time.Millisecond), res.Notes)
	if h := res.Latency["acquire"]; h == nil || h.Count != res.Ops.Succeeded || merged.Config.Rate != rate {
		t.Errorf("acquire %+v for %d grants, config rate %v", h, res.Ops.Succeeded, merged.Config.Rate)
	}
}
