package results

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/figures"
)

// ErrShards is returned (wrapped) by Merge when its files are not the
// shards of one run: not shard files, of different runs or configurations,
// or with an index missing or given twice.
var ErrShards = errors.New("results: not the shards of one run")

// MergeHistograms merges hs into one histogram of the first one's geometry,
// bucket by bucket, and fails if any value would be dropped (a histogram of
// a wider range than the first).
func MergeHistograms(hs ...*hdrhistogram.Histogram) (*hdrhistogram.Histogram, error) {
	if len(hs) == 0 {
		return NewRecorder(), nil
	}
	h0 := hs[0]
	out := hdrhistogram.New(h0.LowestTrackableValue(), h0.HighestTrackableValue(), int(h0.SignificantFigures()))
	for i, h := range hs {
		if dropped := out.Merge(h); dropped != 0 {
			return nil, fmt.Errorf("results: merging histogram %d dropped %d of its %d values", i, dropped, h.TotalCount())
		}
	}
	return out, nil
}

// Merge makes one run of the shard files of one run (`zkbench merge`): a file
// of the same shape as a run of one process, so that report, plot and compare
// read it unchanged. It refuses, wrapping ErrShards, files that are not
// shards, of different runs or configurations, and a shard index missing or
// given twice.
//
// Each case present in every shard is merged: counts and client counts
// summed, histograms merged bucket-exact, throughput the sum of the shards'
// rates (each over its own window; the windows start on one barrier and end
// after one duration), the servers' counters from the shard that scraped them
// for the whole case, per-operation figures over every shard's operations,
// Jain's index over every shard's clients, safety summed and judged across
// shards (CheckAcrossShards). A case missing from some shard, or that a shard
// marked incomplete, makes the run failed, with a StatusDetail that names
// each such case.
func Merge(shards []*Run) (*Run, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%w: no files", ErrShards)
	}
	for i, r := range shards {
		if r.Shard == nil {
			return nil, fmt.Errorf("%w: file %d (run %s) is not a shard's: it has no shard index (run with --shards S --shard-index I)", ErrShards, i+1, r.ID)
		}
	}
	s0 := shards[0]
	count := s0.Shard.Count
	byIndex := map[int]*Run{}
	for i, r := range shards {
		switch {
		case r.ID != s0.ID:
			return nil, fmt.Errorf("%w: file %d is of run %s, file 1 of run %s", ErrShards, i+1, r.ID, s0.ID)
		case r.Shard.Count != count:
			return nil, fmt.Errorf("%w: file %d is shard %d of %d, file 1 shard %d of %d", ErrShards, i+1, r.Shard.Index, r.Shard.Count, s0.Shard.Index, count)
		case r.Shard.Index < 0 || r.Shard.Index >= count:
			return nil, fmt.Errorf("%w: file %d has shard index %d, outside 0..%d", ErrShards, i+1, r.Shard.Index, count-1)
		case byIndex[r.Shard.Index] != nil:
			return nil, fmt.Errorf("%w: shard %d is given twice", ErrShards, r.Shard.Index)
		}
		if err := sameConfig(s0.Config, r.Config); err != nil {
			return nil, fmt.Errorf("%w: shard %d and shard %d: %v", ErrShards, s0.Shard.Index, r.Shard.Index, err)
		}
		byIndex[r.Shard.Index] = r
	}
	var missing []string
	for i := range count {
		if byIndex[i] == nil {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: run %s has %d shards; shard %s missing", ErrShards, s0.ID, count, strings.Join(missing, ", "))
	}
	ordered := make([]*Run, count)
	for i := range count {
		ordered[i] = byIndex[i]
	}
	return mergeRuns(ordered)
}

// sameConfig says how two shards' configurations differ, if they do.
func sameConfig(a, b Config) error {
	if reflect.DeepEqual(a, b) {
		return nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return fmt.Errorf("configurations differ in %s (%v against %v)", va.Type().Field(i).Name, va.Field(i).Interface(), vb.Field(i).Interface())
		}
	}
	return errors.New("configurations differ")
}

type caseKey struct {
	workload, variant string
	clients, repeat   int
}

func keyOf(r *Result) caseKey { return caseKey{r.Workload, r.Variant, r.Clients, r.Repeat} }

func (k caseKey) String() string {
	return fmt.Sprintf("%s %s, %d clients, repeat %d", k.workload, k.variant, k.clients, k.repeat)
}

// mergeRuns merges shards, ordered by index.
func mergeRuns(shards []*Run) (*Run, error) {
	s0 := shards[0]
	out := &Run{
		Format: FormatVersion, ID: s0.ID, Tool: s0.Tool, Command: s0.Command, StartedAt: s0.StartedAt,
		FinishedAt: s0.FinishedAt, Status: StatusComplete, Config: s0.Config, Environment: s0.Environment,
		ClusterMode: s0.ClusterMode, Cluster: s0.Cluster, Settings: s0.Settings, MergedShards: len(shards),
	}
	var details []string
	for _, r := range shards {
		if r.StartedAt.Before(out.StartedAt) {
			out.StartedAt = r.StartedAt
		}
		if r.FinishedAt.After(out.FinishedAt) {
			out.FinishedAt = r.FinishedAt
		}
		if r.Status == StatusFailed || (r.Status == StatusInterrupted && out.Status == StatusComplete) {
			out.Status = r.Status
		}
		if r.Status != StatusComplete {
			d := r.StatusDetail
			if d == "" {
				d = string(r.Status)
			}
			details = append(details, fmt.Sprintf("shard %d: %s", r.Shard.Index, d))
		}
		if out.Calibration == nil {
			out.Calibration = r.Calibration
		}
		for _, l := range r.Leftovers {
			if !slices.Contains(out.Leftovers, l) {
				out.Leftovers = append(out.Leftovers, l)
			}
		}
	}
	for _, r := range shards {
		for _, ev := range r.Timeline {
			ev.At += r.StartedAt.Sub(out.StartedAt)
			if ev.Client == NoClient && r.Shard.Index != 0 {
				continue // case boundaries and the like: shard 0's stand for all
			}
			out.Timeline = append(out.Timeline, ev)
		}
	}
	sort.SliceStable(out.Timeline, func(i, j int) bool { return out.Timeline[i].At < out.Timeline[j].At })

	// Cases in shard 0's order, merged where every shard has them.
	index := make([]map[caseKey]*Result, len(shards))
	for i, r := range shards {
		index[i] = map[caseKey]*Result{}
		for j := range r.Results {
			index[i][keyOf(&r.Results[j])] = &r.Results[j]
		}
	}
	var keys []caseKey
	seen := map[caseKey]bool{}
	for _, r := range shards {
		for j := range r.Results {
			if k := keyOf(&r.Results[j]); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	var incomplete []string
	for _, k := range keys {
		var parts []*Result
		var absent []string
		for i := range shards {
			if res := index[i][k]; res != nil {
				parts = append(parts, res)
			} else {
				absent = append(absent, fmt.Sprint(shards[i].Shard.Index))
			}
		}
		if len(absent) > 0 {
			incomplete = append(incomplete, fmt.Sprintf("case %s has no results from shard %s", k, strings.Join(absent, ", ")))
			continue
		}
		var partial []string
		for i, p := range parts {
			if p.Shard == nil {
				partial = append(partial, fmt.Sprint(shards[i].Shard.Index))
			}
		}
		if len(partial) > 0 {
			incomplete = append(incomplete, fmt.Sprintf("case %s failed in shard %s (its result there is partial)", k, strings.Join(partial, ", ")))
			continue
		}
		res, err := mergeCase(parts)
		if err != nil {
			return nil, fmt.Errorf("results: case %s: %w", k, err)
		}
		for _, p := range parts {
			if p.Shard != nil && p.Shard.Incomplete != "" {
				incomplete = append(incomplete, fmt.Sprintf("case %s: shard %d: %s", k, p.Shard.Index, p.Shard.Incomplete))
			}
		}
		out.Results = append(out.Results, res)
	}
	if len(incomplete) > 0 {
		out.Status = StatusFailed
		details = append(details, "incomplete: "+strings.Join(incomplete, "; "))
	}
	out.StatusDetail = strings.Join(details, "; ")
	return out, nil
}

// mergeCase merges one case's shard results, ordered by shard index.
func mergeCase(parts []*Result) (Result, error) {
	p0 := parts[0]
	res := Result{
		Workload: p0.Workload, Variant: p0.Variant, Backend: p0.Backend, Clients: p0.Clients, Repeat: p0.Repeat,
		StoppedBy: p0.StoppedBy, Latency: map[string]*Histogram{}, PerOp: map[string]float64{},
		Client: ClientCounts{Requests: map[string]int64{}},
	}
	merged := &Merged{SameClock: true}
	var shardCases []*ShardCase
	var perClient []int64
	jainOK := true
	clients := 0
	var earliest, latestStart time.Time
	var end time.Time
	for i, p := range parts {
		sc := p.Shard
		if sc == nil {
			return res, fmt.Errorf("%w: a shard's result has no shard record", ErrShards)
		}
		shardCases = append(shardCases, sc)
		clients += sc.Clients
		merged.Shards = append(merged.Shards, ShardClock{Index: sc.Index, Host: sc.Host, FirstClient: sc.FirstClient, Clients: sc.Clients,
			Started: p.Started, Elapsed: p.Elapsed, Released: sc.Released, Ops: p.Ops.Succeeded})
		if i == 0 || sc.Released.Before(earliest) {
			earliest = sc.Released
		}
		if i == 0 || p.Started.After(latestStart) {
			latestStart = p.Started
		}
		if e := p.Started.Add(p.Elapsed); i == 0 || e.Before(end) {
			end = e
		}
		if len(sc.PerClient) != sc.Clients {
			jainOK = false
		}
		perClient = append(perClient, sc.PerClient...)
		res.StoppedBy = worseStop(res.StoppedBy, p.StoppedBy)
		res.Ops.Issued += p.Ops.Issued
		res.Ops.Succeeded += p.Ops.Succeeded
		res.Ops.Failed += p.Ops.Failed
		res.Ops.Unknown += p.Ops.Unknown
		if p.Elapsed > 0 {
			res.Throughput += float64(p.Ops.Succeeded) / p.Elapsed.Seconds()
		}
		for k, v := range p.Client.Requests {
			res.Client.Requests[k] += v
		}
		res.Client.WatchesArmed += p.Client.WatchesArmed
		res.Client.WatchEvents += p.Client.WatchEvents
		res.Client.WastedWakeups += p.Client.WastedWakeups
		res.Client.LateWatchEvents += p.Client.LateWatchEvents
		if sc.Scraped {
			res.Server, res.ServerPartial = p.Server, p.ServerPartial
			res.Cost.ServerCPUSeconds, res.Cost.ServerRSSBytes = p.Cost.ServerCPUSeconds, p.Cost.ServerRSSBytes
			res.Cost.ServerCostMeasured = p.Cost.ServerCostMeasured
		}
		res.Cost.ClientCPUSeconds += p.Cost.ClientCPUSeconds
		res.Cost.ClientRSSBytes += p.Cost.ClientRSSBytes
		res.Cost.ClientHeapBytes += p.Cost.ClientHeapBytes
		res.Cost.ClientCostPerClient += p.Cost.ClientCostPerClient * float64(sc.Clients)
		res.Fairness.FIFOInversions += p.Fairness.FIFOInversions
		addSafety(&res.Safety, p.Safety, sc.Index)
		for k, n := range p.Errors {
			if res.Errors == nil {
				res.Errors = map[string]int64{}
			}
			res.Errors[k] += n
		}
		for k, n := range p.Faults {
			if res.Faults == nil {
				res.Faults = map[string]int64{}
			}
			res.Faults[k] += n
		}
	}
	if clients != res.Clients {
		return res, fmt.Errorf("%w: the shards ran %d of the case's %d clients", ErrShards, clients, res.Clients)
	}
	for i := range merged.Shards {
		m := &merged.Shards[i]
		m.Offset = m.Released.Sub(earliest)
		merged.Skew = max(merged.Skew, m.Offset)
	}
	res.Started = latestStart
	res.Elapsed = max(0, end.Sub(latestStart))
	if clients > 0 {
		res.Cost.ClientCostPerClient /= float64(clients)
	}
	if len(res.Client.Requests) == 0 {
		res.Client.Requests = nil
	}

	// Histograms, bucket-exact.
	names := map[string]bool{}
	for _, p := range parts {
		for n := range p.Latency {
			names[n] = true
		}
	}
	for name := range names {
		var hs []*hdrhistogram.Histogram
		var want int64
		for _, p := range parts {
			if h := p.Latency[name]; h != nil {
				d, err := h.Decode()
				if err != nil {
					return res, fmt.Errorf("latency %q of shard %d: %w", name, p.Shard.Index, err)
				}
				hs = append(hs, d)
				want += d.TotalCount()
			}
		}
		m, err := MergeHistograms(hs...)
		if err != nil {
			return res, fmt.Errorf("latency %q: %w", name, err)
		}
		if m.TotalCount() != want {
			return res, fmt.Errorf("latency %q: merged %d values of the shards' %d", name, m.TotalCount(), want)
		}
		if res.Latency[name], err = NewHistogram(m); err != nil {
			return res, err
		}
	}

	// Per-operation figures: each shard's divided its own totals (or, for
	// the servers' counters, the whole case's) by its own operations; over
	// the case they divide by every shard's.
	if res.Ops.Succeeded > 0 {
		for _, p := range parts {
			for k, v := range p.PerOp {
				res.PerOp[k] += v * float64(p.Ops.Succeeded) / float64(res.Ops.Succeeded)
			}
		}
	}
	res.Series = mergeSeries(parts, latestStart, res.Elapsed)
	if jainOK {
		res.Fairness.Jain = jainIndex(perClient)
	}

	// Safety across shards.
	tolerance := time.Duration(0)
	merged.SameClock = sameHost(parts)
	if !merged.SameClock {
		tolerance = merged.Skew
	}
	cross := CheckAcrossShards(shardCases, tolerance)
	merged.Sections = cross.Sections
	res.Safety.Violations += cross.Violations
	for _, d := range cross.Details {
		res.Safety.Details = append(res.Safety.Details, "across shards: "+d)
	}

	// Notes: each shard's, once when every shard has it; then the merge's.
	res.Notes = mergeNotes(parts)
	if res.Server != nil && !res.ServerPartial && res.Client.Requests != nil {
		counts := figures.Totals{WatchEvents: res.Client.WatchEvents, LateWatchEvents: res.Client.LateWatchEvents, Requests: res.Client.Requests}
		for _, c := range figures.Checks() {
			if n := c.Note(res.Backend, counts, res.Server); n != "" {
				res.Notes = append(res.Notes, n)
			}
		}
	}
	order := "fencing-token order"
	if !cross.ByToken {
		order = "order of entry (not every grant carried a fencing token)"
	}
	clock := "on one host's clock"
	if !merged.SameClock {
		clock = fmt.Sprintf("on the shards' clocks, overlaps up to the skew %v not counted", merged.Skew)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("merged from %d shards; barrier releases within %v; %d critical sections judged across shards in %s, %s",
		len(parts), merged.Skew, cross.Sections, order, clock))
	var spread time.Duration
	for _, m := range merged.Shards {
		spread = max(spread, m.Started.Add(m.Elapsed).Sub(end), latestStart.Sub(m.Started))
	}
	if res.Elapsed > 0 && spread > res.Elapsed/100 {
		// A scraping shard's edges are the midpoints of its scrapes: a slow
		// scrape moves them.
		res.Notes = append(res.Notes, fmt.Sprintf("the shards' measured windows differ by up to %v (%.1f%% of the common %v): the servers' counters cover shard 0's window, the client counts each shard's own",
			spread.Round(time.Millisecond), 100*float64(spread)/float64(res.Elapsed), res.Elapsed.Round(time.Millisecond)))
	}
	if cross.Violations > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("MUTUAL EXCLUSION VIOLATED ACROSS SHARDS %d times", cross.Violations))
	}
	if cross.Undecided > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d sections of different shards overlapped by no more than the clock skew (%v): not decided", cross.Undecided, merged.Skew))
	}
	if !jainOK {
		res.Notes = append(res.Notes, "Jain's index not computed: a shard did not record its clients' operations")
	}
	if len(parts) > 1 {
		res.Notes = append(res.Notes, "FIFO inversions and the handoff gap are counted within each shard: a grant passing between shards is in neither")
	}
	if len(res.Errors) == 0 {
		res.Errors = nil
	}
	res.Merged = merged
	return res, nil
}

// sameHost reports whether every shard ran on one named host, and so read
// one wall clock.
func sameHost(parts []*Result) bool {
	h := parts[0].Shard.Host
	for _, p := range parts[1:] {
		if p.Shard.Host != h || h == "" {
			return false
		}
	}
	return true
}

// worseStop is the stop reason of a case whose shards stopped by a and b:
// an error before an interruption before the bounds.
func worseStop(a, b StopReason) StopReason {
	rank := map[StopReason]int{StoppedByDuration: 0, StoppedByOps: 1, StoppedByInterrupted: 2, StoppedByError: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// addSafety adds shard index's safety to s.
func addSafety(s *Safety, p Safety, index int) {
	s.Checked += p.Checked
	s.Violations += p.Violations
	s.Prevented += p.Prevented
	for _, d := range p.Details {
		s.Details = append(s.Details, fmt.Sprintf("shard %d: %s", index, d))
	}
	if p.Fence != nil {
		if s.Fence == nil {
			s.Fence = &Fence{Fenced: p.Fence.Fenced}
		}
		s.Fence.Writes += p.Fence.Writes
		s.Fence.Stale += p.Fence.Stale
		s.Fence.Rejected += p.Fence.Rejected
	}
}

// mergeSeries sums the shards' series, each shifted by its start's distance
// from start, into buckets covering elapsed.
func mergeSeries(parts []*Result, start time.Time, elapsed time.Duration) Series {
	interval := parts[0].Series.Interval
	if interval <= 0 {
		return Series{}
	}
	n := max(1, int((elapsed+interval-1)/interval))
	for _, p := range parts {
		n = max(n, len(p.Series.Counts))
	}
	out := Series{Interval: interval, Counts: make([]int64, n)}
	for _, p := range parts {
		shift := int(math.Round(float64(p.Started.Sub(start)) / float64(interval)))
		for i, c := range p.Series.Counts {
			j := min(max(i+shift, 0), n-1)
			out.Counts[j] += c
		}
	}
	return out
}

// mergeNotes keeps a note every shard has once, and prefixes the others
// with their shard.
func mergeNotes(parts []*Result) []string {
	count := map[string]int{}
	for _, p := range parts {
		seen := map[string]bool{}
		for _, n := range p.Notes {
			if !seen[n] {
				seen[n] = true
				count[n]++
			}
		}
	}
	var out []string
	done := map[string]bool{}
	for _, p := range parts {
		for _, n := range p.Notes {
			switch {
			case count[n] == len(parts) && !done[n]:
				done[n] = true
				out = append(out, "every shard: "+n)
			case count[n] < len(parts):
				out = append(out, fmt.Sprintf("shard %d: %s", p.Shard.Index, n))
			}
		}
	}
	return out
}

// jainIndex is Jain's fairness index over xs (0 when nothing succeeded).
func jainIndex(xs []int64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}
