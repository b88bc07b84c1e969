package results

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/figures"
)

// TestMergeHistogramsProperty: values split at random over k histograms
// merge into the histogram of all of them, bucket by bucket, with none
// dropped, whatever the values' spread (clamped into zkbench's range as
// Record does).
func TestMergeHistogramsProperty(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		k := 1 + rng.IntN(8)
		parts := make([]*hdrhistogram.Histogram, k)
		for i := range parts {
			parts[i] = NewRecorder()
		}
		whole := NewRecorder()
		n := rng.IntN(3000)
		for range n {
			// Log-uniform from 100ns (below the range) to 20 minutes (above).
			d := time.Duration(100 * math.Pow(1.2e10, rng.Float64()))
			Record(whole, d)
			Record(parts[rng.IntN(k)], d)
		}
		// Round-trip the parts through the file's encoding first, as merge
		// does with shard files.
		decoded := make([]*hdrhistogram.Histogram, k)
		for i, p := range parts {
			hs, err := NewHistogram(p)
			if err != nil {
				t.Fatal(err)
			}
			if decoded[i], err = hs.Decode(); err != nil {
				t.Fatal(err)
			}
		}
		m, err := MergeHistograms(decoded...)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if m.TotalCount() != int64(n) {
			t.Fatalf("seed %d: merged %d values, want %d", seed, m.TotalCount(), n)
		}
		got, want := m.Export().Counts, whole.Export().Counts
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d buckets, want %d", seed, len(got), len(want))
		}
		for b := range want {
			if got[b] != want[b] {
				t.Fatalf("seed %d: bucket %d holds %d, want %d", seed, b, got[b], want[b])
			}
		}
		if n > 0 && (m.Max() != whole.Max() || m.Min() != whole.Min() || m.ValueAtQuantile(99) != whole.ValueAtQuantile(99)) {
			t.Fatalf("seed %d: summary differs", seed)
		}
	}
}

// TestMergeHistogramsDropped: a histogram of a wider range than the first
// cannot be merged without losing values, and says so.
func TestMergeHistogramsDropped(t *testing.T) {
	wide := hdrhistogram.New(1, int64(time.Hour), 3)
	_ = wide.RecordValue(int64(30 * time.Minute))
	if _, err := MergeHistograms(NewRecorder(), wide); err == nil || !strings.Contains(err.Error(), "dropped 1") {
		t.Fatalf("MergeHistograms: %v, want dropped 1", err)
	}
}

// shardRun is shard index of count of a one-case lock run with n clients,
// whose clients each held the lock for the sections given (enter, exit
// offsets, token), on the same base.
func shardRun(t *testing.T, index, count, n int, base time.Time, sections [][3]int64) *Run {
	t.Helper()
	first, size := ShareOf(n, index, count)
	rec := NewRecorder()
	sec := &Sections{}
	for i, s := range sections {
		j := sec.Add(first+i%size, s[2], time.Duration(s[0]))
		sec.Exit[j] = time.Duration(s[1])
		Record(rec, time.Duration(1000+i)*time.Microsecond)
	}
	h, err := NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	per := make([]int64, size)
	for i := range sections {
		per[i%size]++
	}
	ops := int64(len(sections))
	res := Result{
		Workload: "lock", Variant: "fair", Backend: "etcd", Clients: n, Repeat: 1, StoppedBy: StoppedByDuration,
		Elapsed: time.Second, Started: base, Ops: Ops{Issued: ops, Succeeded: ops}, Throughput: float64(ops),
		Latency: map[figures.Latency]*Histogram{"acquire": h},
		PerOp:   map[string]float64{"watch_events": 1, "requests": 4},
		Client:  ClientCounts{Requests: map[string]int64{"get": 4 * ops}, WatchEvents: ops, BytesSent: 30 * ops, BytesReceived: 50 * ops},
		Safety:  Safety{Checked: ops},
		Series:  Series{Interval: 100 * time.Millisecond, Counts: make([]int64, 10)},
		Shard: &ShardCase{Index: index, Count: count, FirstClient: first, Clients: size, Host: "h",
			Released: base, Base: base, PerClient: per, Sections: sec, Scraped: index == 0},
	}
	res.Series.Counts[0] = ops
	if index == 0 {
		res.Server = map[string]float64{"etcd_debugging_mvcc_events_total": float64(2 * ops * int64(count))}
		res.PerOp["server_watch_events"] = float64(2 * count)
	}
	return &Run{
		Format: FormatVersion, ID: "r1", Status: StatusComplete, StartedAt: base, FinishedAt: base.Add(2 * time.Second),
		Config:  Config{Workload: "lock", Backend: "etcd", Variants: []string{"fair"}, Clients: []int{n}, Repeat: 1, Duration: time.Second},
		Results: []Result{res}, Shard: &Shard{Index: index, Count: count},
	}
}

func ms(d int64) int64 { return d * int64(time.Millisecond) }

func TestMergeShards(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Tokens interleave between the shards, sections never overlap.
	s0 := shardRun(t, 0, 2, 5, base, [][3]int64{{ms(0), ms(1), 10}, {ms(4), ms(5), 12}})
	s1 := shardRun(t, 1, 2, 5, base, [][3]int64{{ms(2), ms(3), 11}, {ms(6), ms(7), 13}, {ms(8), ms(9), 14}})
	m, err := Merge([]*Run{s1, s0})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.Status != StatusComplete || m.MergedShards != 2 || m.Shard != nil || len(m.Results) != 1 {
		t.Fatalf("status %s (%s), merged %d, %d results", m.Status, m.StatusDetail, m.MergedShards, len(m.Results))
	}
	r := m.Results[0]
	if r.Ops.Succeeded != 5 || r.Latency["acquire"].Count != 5 || r.Clients != 5 || r.Shard != nil {
		t.Fatalf("ops %+v, acquire count %d, clients %d", r.Ops, r.Latency["acquire"].Count, r.Clients)
	}
	if r.Safety.Violations != 0 || r.Merged.Sections != 5 || !r.Merged.SameClock {
		t.Fatalf("safety %+v, merged %+v", r.Safety, r.Merged)
	}
	// Server figures from shard 0's scrape, over every shard's operations.
	if got := r.PerOp["server_watch_events"]; got < 1.59 || got > 1.61 { // 8 events / 5 ops
		t.Errorf("server_watch_events per op %v, want 1.6", got)
	}
	if got := r.PerOp["watch_events"]; got < 0.99 || got > 1.01 {
		t.Errorf("watch_events per op %v, want 1", got)
	}
	if r.Throughput != 5 || r.Series.Counts[0] != 5 || r.Client.Requests["get"] != 20 {
		t.Errorf("throughput %v, series %v, requests %v", r.Throughput, r.Series.Counts, r.Client.Requests)
	}
	// Every client count is the shards' sum, the payload bytes too.
	if c := r.Client; c.WatchEvents != 5 || c.BytesSent != 150 || c.BytesReceived != 250 {
		t.Errorf("client counts %+v, want 5 watch events, 150 bytes sent, 250 received", c)
	}
	if r.Fairness.Jain <= 0.9 {
		t.Errorf("jain %v", r.Fairness.Jain)
	}
}

// TestMergeOverlapAcrossShards injects a critical section in shard 1 that
// begins inside one of shard 0's: neither shard's own checker could see it;
// the merge counts it and names both clients.
func TestMergeOverlapAcrossShards(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s0 := shardRun(t, 0, 2, 4, base, [][3]int64{{ms(0), ms(3), 10}, {ms(6), ms(7), 12}})
	s1 := shardRun(t, 1, 2, 4, base, [][3]int64{{ms(2), ms(4), 11}})
	m, err := Merge([]*Run{s0, s1})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Results[0]
	if r.Safety.Violations != 1 || len(r.Safety.Details) != 1 ||
		!strings.Contains(r.Safety.Details[0], "shard 1 client 2 (token 11) entered 1ms before shard 0 client 0 (token 10) left") {
		t.Fatalf("safety %+v", r.Safety)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "MUTUAL EXCLUSION VIOLATED ACROSS SHARDS 1 times") {
		t.Errorf("notes: %q", r.Notes)
	}

	// On different hosts the same overlap within the skew is undecided.
	s1.Results[0].Shard.Host = "other"
	s1.Results[0].Shard.Released = base.Add(5 * time.Millisecond)
	m, err = Merge([]*Run{s0, s1})
	if err != nil {
		t.Fatal(err)
	}
	r = m.Results[0]
	if r.Safety.Violations != 0 || r.Merged.Skew != 5*time.Millisecond || r.Merged.SameClock ||
		!strings.Contains(strings.Join(r.Notes, "\n"), "1 sections of different shards overlapped by no more than the clock skew") {
		t.Fatalf("safety %+v, merged %+v, notes %q", r.Safety, r.Merged, r.Notes)
	}

	// A token granted in two shards is a violation whatever the clocks.
	s1.Results[0].Shard.Sections.Token[0] = 12
	s1.Results[0].Shard.Sections.Enter[0], s1.Results[0].Shard.Sections.Exit[0] = time.Duration(ms(20)), time.Duration(ms(21))
	m, err = Merge([]*Run{s0, s1})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Results[0]; r.Safety.Violations != 1 || !strings.Contains(r.Safety.Details[0], "token 12 granted in shard 0") {
		t.Fatalf("safety %+v", r.Safety)
	}
}

func TestMergeRefuses(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(i, n int) *Run { return shardRun(t, i, n, 6, base, [][3]int64{{0, 1, 0}}) }
	other := mk(1, 2)
	other.ID = "r2"
	cfg := mk(1, 2)
	cfg.Config.Duration = 2 * time.Second
	whole := mk(1, 2)
	whole.Shard = nil
	tests := []struct {
		name  string
		files []*Run
		want  string
	}{
		{"missing", []*Run{mk(0, 3), mk(2, 3)}, "shard 1 missing"},
		{"duplicate", []*Run{mk(0, 2), mk(0, 2)}, "shard 0 is given twice"},
		{"other run", []*Run{mk(0, 2), other}, "of run r2"},
		{"other config", []*Run{mk(0, 2), cfg}, "differ in Duration"},
		{"other count", []*Run{mk(0, 2), mk(1, 3)}, "shard 1 of 3"},
		{"not a shard", []*Run{mk(0, 2), whole}, "is not a shard's"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge(tc.files)
			if !errors.Is(err, ErrShards) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Merge: %v, want ErrShards mentioning %q", err, tc.want)
			}
		})
	}
}

// TestMergeIncomplete: a case one shard has no results for is left out and
// named; a case a shard marked incomplete is merged and named.
func TestMergeIncomplete(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s0 := shardRun(t, 0, 2, 4, base, [][3]int64{{0, 1, 1}})
	s1 := shardRun(t, 1, 2, 4, base, [][3]int64{{2, 3, 2}})
	extra := shardRun(t, 0, 2, 8, base, [][3]int64{{0, 1, 1}}).Results[0]
	s0.Results = append(s0.Results, extra)
	s1.Results[0].Shard.Incomplete = "not every shard reached the end barrier"
	// A case that failed in shard 1 (a partial result, with no shard record).
	p0, p1 := shardRun(t, 0, 2, 6, base, [][3]int64{{0, 1, 1}}), shardRun(t, 1, 2, 6, base, [][3]int64{{2, 3, 2}})
	p1.Results[0].Shard = nil
	s0.Results = append(s0.Results, p0.Results[0])
	s1.Results = append(s1.Results, p1.Results[0])
	m, err := Merge([]*Run{s0, s1})
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != StatusFailed || len(m.Results) != 1 ||
		!strings.Contains(m.StatusDetail, "case lock fair, 8 clients, repeat 1 has no results from shard 1") ||
		!strings.Contains(m.StatusDetail, "shard 1: not every shard reached the end barrier") ||
		!strings.Contains(m.StatusDetail, "case lock fair, 6 clients, repeat 1 failed in shard 1") {
		t.Fatalf("status %s: %s; %d results", m.Status, m.StatusDetail, len(m.Results))
	}
}

// TestMergeStillWaitingAndClientBound: acquisitions still waiting at the
// end add up over the shards, and one client-bound shard makes the merged
// case client-bound, saying which shard.
func TestMergeStillWaitingAndClientBound(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s0 := shardRun(t, 0, 2, 5, base, [][3]int64{{ms(0), ms(1), 10}, {ms(4), ms(5), 12}})
	s1 := shardRun(t, 1, 2, 5, base, [][3]int64{{ms(2), ms(3), 11}})
	s0.Results[0].Ops.Issued += 2
	s0.Results[0].Ops.StillWaiting = 2
	s1.Results[0].Ops.Issued += 1
	s1.Results[0].Ops.StillWaiting = 1
	s1.Results[0].ClientBound = &ClientBound{Reasons: []BoundReason{"cpu"}, Detail: "cpu (97% of 2 cores)"}
	m, err := Merge([]*Run{s0, s1})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Results[0]
	if r.Ops.StillWaiting != 3 || r.Ops.Issued != r.Ops.Succeeded+r.Ops.Failed+r.Ops.Unknown+r.Ops.StillWaiting {
		t.Errorf("ops %+v: want 3 still waiting, and issued adding up", r.Ops)
	}
	if r.ClientBound == nil || len(r.ClientBound.Reasons) != 1 || r.ClientBound.Reasons[0] != "cpu" || r.ClientBound.Detail != "shard 1: cpu (97% of 2 cores)" {
		t.Errorf("client bound %+v", r.ClientBound)
	}
}

// TestMergeLoaded: shards on one host in separate process trees (pods) see
// each other as other processes; the merge takes each shard's own CPU from
// the others' and judges the case again. Load beyond that still marks it.
func TestMergeLoaded(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	machine := func(own, others float64) *Load {
		return &Load{Cores: 2, Machine: &Machine{Cores: 2, Elapsed: 10 * time.Second, Busy: own + others, Own: own, Others: others}}
	}
	for _, tc := range []struct {
		name            string
		others0, other1 float64 // each shard's others; each shard's own is 6 s
		host1           string
		want            string // the merged Loaded's detail, "" for none
	}{
		{"each other's own only", 6, 6, "h", ""},
		{"each other's own and a little", 6.5, 6.5, "h", ""},
		{"another process too", 10, 10, "h", "shard 0: other processes took 20% of 2 cores"},
		{"two hosts: nothing to take away", 6, 6, "g", "shard 0: other processes took 30% of 2 cores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s0 := shardRun(t, 0, 2, 4, base, [][3]int64{{ms(0), ms(1), 10}})
			s1 := shardRun(t, 1, 2, 4, base, [][3]int64{{ms(2), ms(3), 11}})
			s0.Results[0].Load, s1.Results[0].Load = machine(6, tc.others0), machine(6, tc.other1)
			s1.Results[0].Shard.Host = tc.host1
			for _, s := range []*Run{s0, s1} {
				if x := s.Results[0].Load.Loaded(); x != nil {
					s.Results[0].Loaded = x
					s.Results[0].Notes = append(s.Results[0].Notes, x.Note())
				}
			}
			m, err := Merge([]*Run{s0, s1})
			if err != nil {
				t.Fatal(err)
			}
			r := m.Results[0]
			var loadedNotes []string
			for _, n := range r.Notes {
				if strings.Contains(n, "loaded machine: ") {
					loadedNotes = append(loadedNotes, n)
				}
			}
			switch {
			case tc.want == "" && (r.Loaded != nil || len(loadedNotes) > 0):
				t.Fatalf("loaded %+v, notes %q: want not loaded", r.Loaded, loadedNotes)
			case tc.want == "":
			case r.Loaded == nil || r.Loaded.Detail != tc.want:
				t.Fatalf("loaded %+v, want %q", r.Loaded, tc.want)
			case len(loadedNotes) != 1 || loadedNotes[0] != r.Loaded.Note():
				t.Errorf("notes %q, want the merged verdict's alone", loadedNotes)
			}
		})
	}
}
