package measure

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/procstat"
	"github.com/zkbench/zkbench/internal/selfstat"
	"github.com/zkbench/zkbench/results"
)

// scrapeTimeout bounds one server scrape.
const scrapeTimeout = 5 * time.Second

// Members that did not answer a scrape are asked again, up to scrapeTries
// times in all, scrapeRetryAfter apart: a member on a loaded machine, or
// one rejoining its ensemble at a case's edge, may answer a moment later.
const (
	scrapeTries      = 3
	scrapeRetryAfter = time.Second
)

// scrapeMembers scrapes every member, and asks again those that did not
// answer. Each member keeps its first answer. It runs on its own bounded
// contexts, also after ctx ends (the last scrape of an interrupted case).
func scrapeMembers(ctx context.Context, mb backends.MemberScraper) ([]backends.MemberMetrics, error) {
	var ms []backends.MemberMetrics
	for try := 1; ; try++ {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scrapeTimeout)
		again, err := mb.ScrapeMembers(sctx)
		cancel()
		if err != nil {
			return ms, err
		}
		if ms == nil {
			ms = again
		} else {
			for i := range ms {
				if ms[i].Err == nil {
					continue
				}
				if j := slices.IndexFunc(again, func(a backends.MemberMetrics) bool { return a.Endpoint == ms[i].Endpoint }); j >= 0 {
					ms[i] = again[j]
				}
			}
		}
		if try == scrapeTries || !slices.ContainsFunc(ms, func(mm backends.MemberMetrics) bool { return mm.Err != nil }) {
			return ms, nil
		}
		time.Sleep(scrapeRetryAfter)
	}
}

// Meter takes the snapshots at the edges of a measured interval: client
// counts, the servers' counters, and the CPU and memory of this process and
// of the servers that run locally.
type Meter struct {
	scraper backends.Scraper
	// members reads each member on its own (nil: the scraper cannot), so
	// that a member that is down or restarted leaves the others measured.
	members backends.MemberScraper
	// pids gives the local servers' processes by endpoint (host:port).
	pids func() map[string]int
	// embedded: a server runs inside this process, so its cost is the
	// client's too.
	embedded bool
	// isGauge names the scrapes' gauges, left out of a result's server
	// differences (nil: the backend names none).
	isGauge func(string) bool
	// keepAlives times the sessions' keep-alives (nil: the backend
	// cannot).
	keepAlives backends.KeepAliveReporter
	// witness counts the server work the instrument does not see (nil:
	// the backend cannot).
	witness backends.Witnesser
	// sampler runs from the first Snapshot to the second (Load's timer
	// lateness and memory peaks).
	sampler *selfstat.Sampler
	snaps   int
	// last is what the sampler saw over the last interval (LossCause).
	last selfstat.Peaks
	// sharded: the servers' counters count every shard's clients, not only
	// this process's, so they are not compared with the client counts here
	// (the merge compares them with every shard's). With scraper nil as
	// well, another shard reads them.
	sharded bool
	// root is the process zkbench's processes descend from
	// (procstat.Root): their CPU is not other processes' load.
	root int
}

// MeterOption configures a Meter.
type MeterOption func(*Meter)

// WithServerPIDs makes the meter ask pids, at every snapshot, for the
// local servers' process ids by endpoint (workloads.Case.ServerPIDs). Default: the
// member PIDs in the ClusterInfo, fixed.
func WithServerPIDs(pids func() map[string]int) MeterOption {
	return func(m *Meter) {
		if pids != nil {
			m.pids = func() map[string]int { return byHostPort(pids()) }
		}
	}
}

// WithShardOf makes the meter one shard's (workloads.Case.Shard): with scrape it reads
// the servers' counters for the whole case but does not compare them with
// this shard's client counts; without, it does not read them at all.
func WithShardOf(scrape bool) MeterOption {
	return func(m *Meter) {
		m.sharded = true
		if !scrape {
			m.scraper, m.members = nil, nil
		}
	}
}

// NewMeter returns a Meter for b's cluster as info describes it.
func NewMeter(b backends.Backend, info backends.ClusterInfo, opts ...MeterOption) *Meter {
	m := &Meter{root: procstat.Root()}
	m.scraper, _ = b.(backends.Scraper)
	m.members, _ = b.(backends.MemberScraper)
	m.keepAlives = keepAliveReporter(b)
	m.witness = ability[backends.Witnesser](b)
	if g := gaugeNamer(b); g != nil {
		m.isGauge = g.IsGauge
	}
	self := os.Getpid()
	static := map[string]int{}
	for _, mem := range info.Members {
		switch {
		case mem.PID == self:
			m.embedded = true
		case mem.PID > 0:
			static[mem.Endpoint] = mem.PID
		}
	}
	static = byHostPort(static)
	m.pids = func() map[string]int { return static }
	for _, o := range opts {
		o(m)
	}
	if m.embedded {
		// The embedded server's cost is this process's: no server PIDs.
		m.pids = func() map[string]int { return nil }
	}
	return m
}

// Snapshot is everything a Meter reads at one edge of an interval.
type Snapshot struct {
	At        time.Time
	Client    instrument.Counts
	Server    backends.Metrics
	ServerErr error
	// Members are the servers' counters member by member, when the
	// backend can read them so (backends.MemberScraper); Server is then
	// their sum over the members that answered.
	Members []backends.MemberMetrics
	Self    procstat.Stat
	SelfErr error
	// Machine is the machine's CPU time, zkbench's processes' and the
	// kernel's; MachineErr says why it could not be read.
	Machine    procstat.Machine
	MachineErr error
	// PIDs are the local servers' processes by endpoint (host:port), and
	// Servers their figures by PID; ServersErr says why one could not be
	// read.
	PIDs       map[string]int
	Servers    map[int]procstat.Stat
	ServersErr error
	// Runtime is this process's scheduler and GC histograms; Peaks what
	// the meter's sampler saw since the previous Snapshot (the second
	// Snapshot's Peaks cover the interval); KeepAlives the backend's
	// keep-alive totals (HasKeepAlives: it reports them).
	Runtime       selfstat.Runtime
	RunQueue      time.Duration
	HasRunQueue   bool
	Peaks         selfstat.Peaks
	KeepAlives    backends.KeepAliveCounts
	HasKeepAlives bool
	// Witness is the backend's count of server work the instrument does
	// not see (HasWitness: it counts it).
	Witness    backends.Witness
	HasWitness bool
}

// Snapshot reads client counts first and the servers right after, so the
// two sides cover (almost) the same instant. ctx bounds the scrape; a
// cancelled ctx is replaced by a fresh bounded one so that an interrupted
// case still gets its closing snapshot.
func (m *Meter) Snapshot(ctx context.Context, clients *Clients) Snapshot {
	s := Snapshot{At: time.Now(), Runtime: selfstat.ReadRuntime()}
	s.RunQueue, s.HasRunQueue = selfstat.RunQueueWait()
	m.snaps++
	switch {
	case m.sampler == nil:
		m.sampler = selfstat.StartSampler()
	case m.snaps%2 == 0:
		s.Peaks = m.sampler.Take()
		m.last = s.Peaks
		m.sampler.Stop()
		m.sampler = nil
	}
	if m.keepAlives != nil {
		s.KeepAlives, s.HasKeepAlives = m.keepAlives.KeepAlives(), true
	}
	if m.witness != nil {
		s.Witness, s.HasWitness = m.witness.Witness(), true
	}

	if clients != nil {
		s.Client = clients.Total()
		if s.HasWitness {
			s.Witness = s.Witness.Add(clients.RemoteWitness())
		}
	}
	if m.scraper != nil {
		if m.members != nil {
			s.Members, s.ServerErr = scrapeMembers(ctx, m.members)
			s.Server = backends.SumMembers(s.Members)
		} else {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scrapeTimeout)
			s.Server, s.ServerErr = m.scraper.Scrape(sctx)
			cancel()
		}
		if clients != nil {
			// The scrape takes milliseconds while clients keep working:
			// read the clients again and keep the midpoint, so both sides
			// describe about the same instant.
			s.Client = midpoint(s.Client, clients.Total())
		}
		if s.HasWitness {
			w := m.witness.Witness()
			if clients != nil {
				w = w.Add(clients.RemoteWitness())
			}
			s.Witness = s.Witness.Mid(w)
		}
	}
	s.Self, s.SelfErr = procstat.Self()
	s.Machine, s.MachineErr = procstat.ReadMachine(m.root)
	if s.PIDs = m.pids(); len(s.PIDs) > 0 {
		s.Servers = make(map[int]procstat.Stat, len(s.PIDs))
		for _, pid := range s.PIDs {
			st, err := procstat.Read(pid)
			if err != nil {
				s.ServersErr = fmt.Errorf("server pid %d: %w", pid, err)
				continue
			}
			s.Servers[pid] = st
		}
	}
	return s
}

// midpoint returns a + (b-a)/2 for every count.
func midpoint(a, b instrument.Counts) instrument.Counts {
	half := func(x, y int64) int64 { return x + (y-x)/2 }
	m := instrument.Counts{
		Requests:          make(map[string]int64, len(b.Requests)),
		Failures:          make(map[string]int64, len(b.Failures)),
		WatchesArmed:      half(a.WatchesArmed, b.WatchesArmed),
		WatchEvents:       half(a.WatchEvents, b.WatchEvents),
		LateWatchEvents:   half(a.LateWatchEvents, b.LateWatchEvents),
		SessionLostEvents: half(a.SessionLostEvents, b.SessionLostEvents),
		WastedWakeups:     half(a.WastedWakeups, b.WastedWakeups),
		BytesSent:         half(a.BytesSent, b.BytesSent),
		BytesReceived:     half(a.BytesReceived, b.BytesReceived),
	}
	for k, v := range b.Requests {
		m.Requests[k] = half(a.Requests[k], v)
	}
	for k, v := range b.Failures {
		m.Failures[k] = half(a.Failures[k], v)
	}
	// The servers were read somewhere between a and b: the calls in
	// flight at either read, and half those sent between them, may or may
	// not be in their counts.
	m.InFlight = make(map[string]int64, len(b.Requests))
	for k, v := range b.Requests {
		m.InFlight[k] = max(a.InFlight[k], b.InFlight[k]) + (v-a.Requests[k]+1)/2
	}
	return m
}

// Fill writes into res what happened between before and after: the client
// counts (when instrumented), the servers' counter delta, per-operation
// figures over ops successful operations, and cost. baseRSS is this
// process's resident memory before the clients opened, for the per-client
// memory figure. Disagreements between client and server counts of the same
// thing become Notes.
func (m *Meter) Fill(res *results.Result, before, after Snapshot, ops int64, instrumented bool, baseRSS uint64) {
	if res.PerOp == nil {
		res.PerOp = map[string]float64{}
	}
	per := func(v float64) float64 {
		if ops <= 0 {
			return 0
		}
		return v / float64(ops)
	}
	d := after.Client.Sub(before.Client)
	var witness *backends.Witness
	if before.HasWitness && after.HasWitness {
		w := after.Witness.Sub(before.Witness)
		witness = &w
	}
	if instrumented {
		res.Client = clientCounts(d)
		res.Client.Witness = witness
		if ops > 0 {
			// Fan-out counts every notification that reached the client,
			// including those of watches the recipe had already abandoned
			// (ZooKeeper still delivers them): that is what the servers sent.
			res.PerOp[figures.WatchEvents.Key] = per(float64(d.WatchEvents + d.LateWatchEvents))
			res.PerOp[figures.WatchesArmed.Key] = per(float64(d.WatchesArmed))
			res.PerOp[figures.Requests.Key] = per(float64(d.TotalRequests()))
			res.PerOp[figures.BytesSent.Key] = per(float64(d.BytesSent))
			res.PerOp[figures.BytesReceived.Key] = per(float64(d.BytesReceived))
			for k, v := range d.Requests {
				if v != 0 {
					res.PerOp[figures.RequestsOf(k).Key] = per(float64(v))
				}
			}
		}
	}
	switch {
	case m.scraper == nil && m.sharded:
		// Another shard reads the servers for the whole case.
	case m.scraper == nil:
		res.Notes = append(res.Notes, "server counters not measured: the backend has no scraper")
	case before.ServerErr != nil || after.ServerErr != nil:
		res.Notes = append(res.Notes, fmt.Sprintf("server counters not measured: %v", firstErr(before.ServerErr, after.ServerErr)))
	case fillPartial(res, before, after, m.isGauge):
		// Some member was down or restarted: res.Server sums the others,
		// with no per-operation figure and no client|server comparison.
	default:
		res.Server = after.Server.CounterDelta(before.Server, m.isGauge)
		if ops > 0 {
			for _, f := range figures.ServerPerOp() {
				if v, ok := res.Server[f.Metric]; ok {
					res.PerOp[f.Key] = per(v)
				}
			}
		}
		if instrumented && !m.sharded {
			counts := figures.Totals{WatchEvents: d.WatchEvents, LateWatchEvents: d.LateWatchEvents, Requests: d.Requests, Witness: witness,
				InFlight: d.InFlight}
			for _, c := range figures.Checks() {
				if n := c.Note(res.Backend, counts, res.Server); n != "" {
					res.Notes = append(res.Notes, n)
				}
			}
		}
	}
	m.fillCost(res, before, after, baseRSS)
	m.fillLoad(res, before, after)
}

// Stop ends the meter's sampler, if a Snapshot started one and no second
// Snapshot stopped it (a case that ended early). Safe to call twice.
func (m *Meter) Stop() {
	if m.sampler != nil {
		m.sampler.Stop()
		m.sampler = nil
	}
}

// fillLoad records what this process spent and how late it ran between
// the snapshots, and applies the client-bound rule (results.Load.Bound).
func (m *Meter) fillLoad(res *results.Result, before, after Snapshot) {
	elapsed := after.At.Sub(before.At)
	l := &results.Load{Cores: runtime.GOMAXPROCS(0), ServerInProcess: m.embedded,
		Sched:         after.Runtime.Sched.Sub(before.Runtime.Sched).Spread(),
		GCPauses:      after.Runtime.GCPauses.Sub(before.Runtime.GCPauses).Spread(),
		TimerLateness: after.Peaks.TimerLateness,
		HeapPeakBytes: after.Peaks.HeapBytes, RSSPeakBytes: after.Peaks.RSSBytes,
	}
	if _, h := results.PrimaryLatency(res); h != nil {
		l.LatencyP99 = time.Duration(h.P99)
	}
	l.ServiceP99 = results.ServiceOf(res)
	if before.SelfErr == nil && after.SelfErr == nil && elapsed > 0 {
		l.CPUFraction = (after.Self.CPUSeconds - before.Self.CPUSeconds) / (elapsed.Seconds() * float64(l.Cores))
	} else {
		l.CPUNotMeasured = true
	}
	if before.HasRunQueue && after.HasRunQueue && elapsed > 0 {
		l.RunQueueShare = max(0, float64(after.RunQueue-before.RunQueue)/(float64(elapsed)*float64(l.Cores)))
	}
	if before.MachineErr == nil && after.MachineErr == nil && elapsed > 0 {
		l.Machine = machineLoad(before, after, elapsed)
	}
	if before.HasKeepAlives && after.HasKeepAlives {
		d := after.KeepAlives.Sub(before.KeepAlives)
		l.KeepAlives = &results.KeepAlives{What: d.What, Interval: d.Interval, Late: d.Late,
			Lateness: bucketSpread(d.Lateness), Replies: bucketSpread(d.Replies)}
	}
	res.Load = l
	if res.Loaded = l.Loaded(); res.Loaded != nil {
		res.Notes = append(res.Notes, res.Loaded.Note())
	}
	if res.ClientBound = l.Bound(); res.ClientBound != nil {
		res.Notes = append(res.Notes, res.ClientBound.Note(l.ServerInProcess))
	}
}

// machineLoad is what the machine's CPUs did between the snapshots: the
// servers' processes that are not zkbench's children (containers) are
// counted apart from the other processes.
func machineLoad(before, after Snapshot, elapsed time.Duration) *results.Machine {
	u := after.Machine.Since(before.Machine)
	var servers float64
	containers := false
	for pid, a := range after.Servers {
		b, ok := before.Servers[pid]
		if _, own := after.Machine.Own[pid]; ok && !own {
			servers += max(0, a.CPUSeconds-b.CPUSeconds)
			containers = true
		}
	}
	// The containers' processes are among the other processes (not
	// zkbench's children): they are the servers'.
	others := max(0, u.Others()-servers)
	if containers {
		// The engine runs the servers' containers and forwards the
		// clients' traffic to their published ports (docker-proxy): its
		// work is the servers' too.
		servers += u.Engine
	} else {
		others += u.Engine
	}
	return &results.Machine{Cores: u.Cores, Elapsed: elapsed, Busy: u.Busy, Own: u.Own, Servers: servers,
		Kernel: u.Kernel, Others: others, Steal: u.Steal}
}

// LossCause says which side was late around the sessions lost at lostAt
// (Clients.LostAt): the meter's 50 ms timer over the session timeout
// before each loss (three keep-alive intervals, 10 s where unknown) tells
// a client that ran late from one that ran on time; load's case figures
// (results.LossCause) tell the rest. It is appended to the "N sessions
// were lost" note.
func (m *Meter) LossCause(load *results.Load, lostAt []time.Time) string {
	window := 10 * time.Second
	if load != nil && load.KeepAlives != nil && load.KeepAlives.Interval > 0 {
		window = 3 * load.KeepAlives.Interval
	}
	var late time.Duration
	var at time.Time
	seen := 0
	for _, t := range lostAt {
		l, n := m.last.MaxLate(t, window)
		if n > 0 {
			seen++
			if l >= late {
				late, at = l, t
			}
		}
	}
	switch {
	case seen == 0:
		return results.LossCause(load)
	case late >= backends.KeepAliveLateBound(window/3):
		return fmt.Sprintf(": the client was late (its 50 ms timer woke up to %s late in the %s before a loss, at %s)",
			results.FormatDuration(late), results.FormatDuration(window), at.UTC().Format("15:04:05.000"))
	}
	cause := results.LossCause(load)
	if strings.HasPrefix(cause, ": the client was late") {
		return cause
	}
	return fmt.Sprintf(": the client ran on time (its 50 ms timer at most %s late in the %s before each of %d losses)%s",
		results.FormatDuration(late), results.FormatDuration(window), seen, strings.Replace(cause, ": ", "; ", 1))
}

// bucketSpread summarises keep-alive buckets: quantiles and the maximum
// as bucket upper bounds (the last bound for the open last bucket).
func bucketSpread(b backends.DurationBuckets) results.Spread {
	var n int64
	for _, c := range b {
		n += c
	}
	if n <= 0 {
		return results.Spread{}
	}
	upper := func(i int) time.Duration { return backends.DurationBounds[min(i, len(backends.DurationBounds)-1)] }
	at := func(q float64) time.Duration {
		rank := int64(math.Ceil(q * float64(n)))
		var seen int64
		for i, c := range b {
			seen += c
			if seen >= rank && c > 0 {
				return upper(i)
			}
		}
		return 0
	}
	sp := results.Spread{Count: n, P50: at(0.5), P99: at(0.99)}
	for i, c := range b {
		if c > 0 {
			sp.Max = upper(i)
		}
	}
	return sp
}

// gaugeNamer finds the GaugeNamer in b or the backends it wraps.
func gaugeNamer(b backends.Backend) backends.GaugeNamer {
	return ability[backends.GaugeNamer](b)
}

// keepAliveReporter finds the KeepAliveReporter in b or the backends it
// wraps (Unwrap), nil if none reports keep-alives.
func keepAliveReporter(b backends.Backend) backends.KeepAliveReporter {
	return ability[backends.KeepAliveReporter](b)
}

// ability is the first of b and the backends it wraps (Unwrap) that is a
// T, the zero T if none is.
func ability[T any](b backends.Backend) T {
	for b != nil {
		if r, ok := b.(T); ok {
			return r
		}
		u, ok := b.(interface{ Unwrap() backends.Backend })
		if !ok {
			break
		}
		b = u.Unwrap()
	}
	var zero T
	return zero
}

func (m *Meter) fillCost(res *results.Result, before, after Snapshot, baseRSS uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.Cost.ClientHeapBytes = ms.HeapAlloc
	if before.SelfErr == nil && after.SelfErr == nil {
		res.Cost.ClientCPUSeconds = after.Self.CPUSeconds - before.Self.CPUSeconds
		res.Cost.ClientRSSBytes = after.Self.RSSBytes
		if res.Clients > 0 && after.Self.RSSBytes > baseRSS && baseRSS > 0 {
			res.Cost.ClientCostPerClient = float64(after.Self.RSSBytes-baseRSS) / float64(res.Clients)
		}
	}
	switch {
	case len(before.PIDs) > 0 || len(after.PIDs) > 0:
		if why := changedServers(before.PIDs, after.PIDs); why != "" {
			res.Notes = append(res.Notes, "server cost not measured: "+why)
			break
		}
		if err := firstErr(before.ServersErr, after.ServersErr); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("server cost not measured: %v", err))
			break
		}
		var cpu float64
		var rss uint64
		for pid, a := range after.Servers {
			cpu += a.CPUSeconds - before.Servers[pid].CPUSeconds
			rss += a.RSSBytes
		}
		res.Cost.ServerCPUSeconds, res.Cost.ServerRSSBytes, res.Cost.ServerCostMeasured = cpu, rss, true
	case m.embedded:
		// The server's cost is the client's own: ServerCostMeasured stays
		// false and the run's cluster mode says why.
	default:
		// Remote servers that export their own process metrics (etcd).
		if c, ok := res.Server[backends.MetricCPUSeconds]; ok {
			res.Cost.ServerCPUSeconds, res.Cost.ServerCostMeasured = c, true
			if r, ok := res.Server[backends.MetricResidentBytes]; ok && r > 0 {
				res.Cost.ServerRSSBytes = uint64(r)
			}
		}
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// sortedKinds returns m's keys in order, for stable notes.
func sortedKinds[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// errorSummary formats error kinds and counts in order: "a=1, b=2".
func errorSummary(m map[string]int64) string {
	var parts []string
	for _, k := range sortedKinds(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// clientCounts converts the instrument's counts to the results model
// (which has no failures or session-lost field: the workload reports those
// as errors).
func clientCounts(c instrument.Counts) results.ClientCounts {
	return results.ClientCounts{
		Requests:        maps.Clone(c.Requests),
		WatchesArmed:    c.WatchesArmed,
		WatchEvents:     c.WatchEvents,
		LateWatchEvents: c.LateWatchEvents,
		WastedWakeups:   c.WastedWakeups,
		BytesSent:       c.BytesSent,
		BytesReceived:   c.BytesReceived,
		InFlight:        nonZero(c.InFlight),
	}
}

// nonZero is m without its zero entries, nil if none is left.
func nonZero(m map[string]int64) map[string]int64 {
	var out map[string]int64
	for k, v := range m {
		if v != 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[k] = v
		}
	}
	return out
}
