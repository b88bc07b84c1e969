package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
)

// caseMerge merges one case's shard results, ordered by shard index:
// add each, then finish.
type caseMerge struct {
	res        Result
	merged     *Merged
	shardCases []*ShardCase
	perClient  []int64 // every shard's, in client order
	jainOK     bool
	clients    int
	// earliest is the first barrier release; latestStart and end the common
	// window's edges.
	earliest, latestStart, end time.Time
}

// mergeCase merges one case's shard results, ordered by shard index.
func mergeCase(parts []*Result) (Result, error) {
	p0 := parts[0]
	m := &caseMerge{
		res: Result{
			Workload: p0.Workload, Variant: p0.Variant, Backend: p0.Backend, Clients: p0.Clients, Repeat: p0.Repeat,
			StoppedBy: p0.StoppedBy, Latency: map[figures.Latency]*Histogram{}, PerOp: map[string]float64{},
			Client: ClientCounts{Requests: map[string]int64{}},
		},
		merged: &Merged{}, jainOK: true,
	}
	for i, p := range parts {
		if err := m.add(i, p); err != nil {
			return m.res, err
		}
	}
	if m.clients != m.res.Clients {
		return m.res, fmt.Errorf("%w: the shards ran %d of the case's %d clients", ErrShards, m.clients, m.res.Clients)
	}
	m.window(parts)
	if err := m.latency(parts); err != nil {
		return m.res, err
	}
	m.perOp(parts)
	cross := m.safety(parts)
	m.notes(parts, cross)
	m.loaded(parts)
	return m.res, nil
}

// add sums shard result p, the i-th, into the case.
func (m *caseMerge) add(i int, p *Result) error {
	res, sc := &m.res, p.Shard
	if sc == nil {
		return fmt.Errorf("%w: a shard's result has no shard record", ErrShards)
	}
	m.shardCases = append(m.shardCases, sc)
	m.clients += sc.Clients
	m.merged.Shards = append(m.merged.Shards, ShardClock{Index: sc.Index, Host: sc.Host, FirstClient: sc.FirstClient, Clients: sc.Clients,
		Started: p.Started, Elapsed: p.Elapsed, Released: sc.Released, Ops: p.Ops.Succeeded})
	if i == 0 || sc.Released.Before(m.earliest) {
		m.earliest = sc.Released
	}
	if i == 0 || p.Started.After(m.latestStart) {
		m.latestStart = p.Started
	}
	if e := p.Started.Add(p.Elapsed); i == 0 || e.Before(m.end) {
		m.end = e
	}
	if len(sc.PerClient) != sc.Clients {
		m.jainOK = false
	}
	m.perClient = append(m.perClient, sc.PerClient...)
	res.StoppedBy = worseStop(res.StoppedBy, p.StoppedBy)
	res.Ops.Add(p.Ops)
	if p.ClientBound != nil {
		// One saturated load generator bounds the whole case: its share of
		// the clients ran slower than the rest could.
		res.ClientBound = mergeBound(res.ClientBound, p.ClientBound, sc.Index)
	}
	if p.Elapsed > 0 {
		res.Throughput += float64(p.Ops.Succeeded) / p.Elapsed.Seconds()
	}
	for k, v := range p.Client.Requests {
		res.Client.Requests[k] += v
	}
	for k, v := range p.Client.InFlight {
		if res.Client.InFlight == nil {
			res.Client.InFlight = map[string]int64{}
		}
		res.Client.InFlight[k] += v // each shard's clients were read apart from the servers
	}
	res.Client.WatchesArmed += p.Client.WatchesArmed
	res.Client.WatchEvents += p.Client.WatchEvents
	res.Client.WastedWakeups += p.Client.WastedWakeups
	res.Client.LateWatchEvents += p.Client.LateWatchEvents
	res.Client.BytesSent += p.Client.BytesSent
	res.Client.BytesReceived += p.Client.BytesReceived
	if w := p.Client.Witness; w != nil {
		// Every shard counts its own; a case whose shards did not all
		// count one has none (merged below).
		if i == 0 {
			res.Client.Witness = &backends.Witness{}
		}
		if res.Client.Witness != nil {
			*res.Client.Witness = res.Client.Witness.Add(*w)
		}
	} else {
		res.Client.Witness = nil
	}
	if sc.Scraped {
		// The scraping shard read the servers' watches and heap too; its
		// readings saw the other shards' clients arm at their own pace.
		res.Watch = p.Watch
		res.Server, res.ServerPartial = p.Server, p.ServerPartial
		res.Cost.ServerCPUSeconds, res.Cost.ServerRSSBytes = p.Cost.ServerCPUSeconds, p.Cost.ServerRSSBytes
		res.Cost.ServerCostMeasured = p.Cost.ServerCostMeasured
	}
	res.Cost.ClientCPUSeconds += p.Cost.ClientCPUSeconds
	res.Cost.ClientRSSBytes += p.Cost.ClientRSSBytes
	res.Cost.ClientHeapBytes += p.Cost.ClientHeapBytes
	res.Cost.ClientCostPerClient += p.Cost.ClientCostPerClient * float64(sc.Clients)
	res.Fairness.FIFOInversions += p.Fairness.FIFOInversions
	res.SessionsLost += p.SessionsLost
	addSafety(&res.Safety, p.Safety, sc.Index)
	res.Errors = addCounts(res.Errors, p.Errors)
	res.Faults = addCounts(res.Faults, p.Faults)
	return nil
}

// mergeBound adds shard i's client-bound reasons to the case's.
func mergeBound(to, from *ClientBound, i int) *ClientBound {
	if to == nil {
		to = &ClientBound{}
	}
	for _, r := range from.Reasons {
		if !slices.Contains(to.Reasons, r) {
			to.Reasons = append(to.Reasons, r)
		}
	}
	detail := fmt.Sprintf("shard %d: %s", i, from.Detail)
	if to.Detail != "" {
		detail = to.Detail + "; " + detail
	}
	to.Detail = detail
	return to
}

// addCounts adds from into to (made when needed).
func addCounts(to, from map[string]int64) map[string]int64 {
	for k, n := range from {
		if to == nil {
			to = map[string]int64{}
		}
		to[k] += n
	}
	return to
}

// window sets the common window, the clock offsets and what is averaged
// over clients.
func (m *caseMerge) window(parts []*Result) {
	res := &m.res
	for i := range m.merged.Shards {
		sh := &m.merged.Shards[i]
		sh.Offset = sh.Released.Sub(m.earliest)
		m.merged.Skew = max(m.merged.Skew, sh.Offset)
	}
	res.Started = m.latestStart
	res.Elapsed = max(0, m.end.Sub(m.latestStart))
	if m.clients > 0 {
		res.Cost.ClientCostPerClient /= float64(m.clients)
	}
	if len(res.Client.Requests) == 0 {
		res.Client.Requests = nil
	}
	if len(res.Errors) == 0 {
		res.Errors = nil
	}
	res.Series = mergeSeries(parts, m.latestStart, res.Elapsed)
	if m.jainOK {
		res.Fairness.Jain = JainIndex(m.perClient)
	}
	res.Merged = m.merged
}

// loaded marks the case measured on a loaded machine when a shard's
// machine was. Shards on one host (ShardCase.Host) in separate process
// trees (pods) each see the others as other processes: their own CPU is
// taken from each one's others before the rule is applied again.
func (m *caseMerge) loaded(parts []*Result) {
	ownOnHost := map[string]float64{}
	for _, p := range parts {
		if p.Load != nil && p.Load.Machine != nil && p.Shard.Host != "" {
			ownOnHost[p.Shard.Host] += p.Load.Machine.Own
		}
	}
	for _, p := range parts {
		if p.Load == nil || p.Load.Machine == nil {
			continue
		}
		l := *p.Load
		mach := *l.Machine
		if p.Shard.Host != "" {
			mach.Others = max(0, mach.Others-(ownOnHost[p.Shard.Host]-mach.Own))
		}
		l.Machine = &mach
		if x := l.Loaded(); x != nil {
			if m.res.Loaded == nil || x.OthersShare > m.res.Loaded.OthersShare {
				x.Detail = fmt.Sprintf("shard %d: %s", p.Shard.Index, x.Detail)
				m.res.Loaded = x
			}
		}
	}
	if m.res.Loaded != nil {
		m.res.Notes = append(m.res.Notes, m.res.Loaded.Note())
	}
}

// latency merges each latency histogram bucket by bucket, and fails unless
// every shard's value is in the merged one.
func (m *caseMerge) latency(parts []*Result) error {
	names := map[figures.Latency]bool{}
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
					return fmt.Errorf("latency %q of shard %d: %w", name, p.Shard.Index, err)
				}
				hs = append(hs, d)
				want += d.TotalCount()
			}
		}
		h, err := MergeHistograms(hs...)
		if err != nil {
			return fmt.Errorf("latency %q: %w", name, err)
		}
		if h.TotalCount() != want {
			return fmt.Errorf("latency %q: merged %d values of the shards' %d", name, h.TotalCount(), want)
		}
		if m.res.Latency[name], err = NewHistogram(h); err != nil {
			return err
		}
	}
	return nil
}

// perOp: each shard divided its own totals (or, for the servers' counters,
// the whole case's) by its own operations; over the case they divide by
// every shard's.
func (m *caseMerge) perOp(parts []*Result) {
	total := float64(m.res.Ops.Succeeded)
	if total == 0 {
		return
	}
	for _, p := range parts {
		for k, v := range p.PerOp {
			m.res.PerOp[k] += v * float64(p.Ops.Succeeded) / total
		}
	}
}

// safety judges mutual exclusion across shards: with no tolerance on one
// host's clock, else within the skew.
func (m *caseMerge) safety(parts []*Result) CrossShard {
	tolerance := time.Duration(0)
	m.merged.SameClock = sameHost(parts)
	if !m.merged.SameClock {
		tolerance = m.merged.Skew
	}
	cross := CheckAcrossShards(m.shardCases, tolerance)
	m.merged.Sections = cross.Sections
	m.res.Safety.Violations += cross.Violations
	for _, d := range cross.Details {
		m.res.Safety.Details = append(m.res.Safety.Details, "across shards: "+d)
	}
	return cross
}

// notes: each shard's (once when every shard has it), the client-server
// checks over the whole case, then what the merge found.
func (m *caseMerge) notes(parts []*Result, cross CrossShard) {
	res, merged := &m.res, m.merged
	res.Notes = mergeNotes(parts)
	if res.Server != nil && !res.ServerPartial && res.Client.Requests != nil {
		counts := figures.Totals{WatchEvents: res.Client.WatchEvents, LateWatchEvents: res.Client.LateWatchEvents, Requests: res.Client.Requests,
			Witness: res.Client.Witness, InFlight: res.Client.InFlight}
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
	for _, sh := range merged.Shards {
		spread = max(spread, sh.Started.Add(sh.Elapsed).Sub(m.end), m.latestStart.Sub(sh.Started))
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
	if !m.jainOK {
		res.Notes = append(res.Notes, "Jain's index not computed: a shard did not record its clients' operations")
	}
	if len(parts) > 1 {
		res.Notes = append(res.Notes, "FIFO inversions and the handoff gap are counted within each shard: a grant passing between shards is in neither")
	}
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
			if strings.HasPrefix(n, loadedNoteStart) {
				continue // the merge judges the case again (caseMerge.loaded)
			}
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
			case strings.HasPrefix(n, loadedNoteStart):
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

// JainIndex is Jain's fairness index over xs: (Σx)² / (n Σx²), 1 when all
// are equal, 1/n when one client got everything; 0 when nothing succeeded.
func JainIndex(xs []int64) float64 {
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
