package workloads

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/procstat"
	"github.com/zkbench/zkbench/results"
)

// scrapeTimeout bounds one server scrape.
const scrapeTimeout = 5 * time.Second

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
	// sharded: the servers' counters count every shard's clients, not only
	// this process's, so they are not compared with the client counts here
	// (the merge compares them with every shard's). With scraper nil as
	// well, another shard reads them.
	sharded bool
}

// MeterOption configures a Meter.
type MeterOption func(*Meter)

// WithServerPIDs makes the meter ask pids, at every snapshot, for the
// local servers' process ids by endpoint (Case.ServerPIDs). Default: the
// member PIDs in the ClusterInfo, fixed.
func WithServerPIDs(pids func() map[string]int) MeterOption {
	return func(m *Meter) {
		if pids != nil {
			m.pids = func() map[string]int { return byHostPort(pids()) }
		}
	}
}

// WithShardOf makes the meter one shard's (Case.Shard): with scrape it reads
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
	m := &Meter{}
	m.scraper, _ = b.(backends.Scraper)
	m.members, _ = b.(backends.MemberScraper)
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
	// PIDs are the local servers' processes by endpoint (host:port), and
	// Servers their figures by PID; ServersErr says why one could not be
	// read.
	PIDs       map[string]int
	Servers    map[int]procstat.Stat
	ServersErr error
}

// Snapshot reads client counts first and the servers right after, so the
// two sides cover (almost) the same instant. ctx bounds the scrape; a
// cancelled ctx is replaced by a fresh bounded one so that an interrupted
// case still gets its closing snapshot.
func (m *Meter) Snapshot(ctx context.Context, clients *Clients) Snapshot {
	s := Snapshot{At: time.Now()}
	if clients != nil {
		s.Client = clients.Total()
	}
	if m.scraper != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scrapeTimeout)
		if m.members != nil {
			s.Members, s.ServerErr = m.members.ScrapeMembers(sctx)
			s.Server = backends.SumMembers(s.Members)
		} else {
			s.Server, s.ServerErr = m.scraper.Scrape(sctx)
		}
		cancel()
		if clients != nil {
			// The scrape takes milliseconds while clients keep working:
			// read the clients again and keep the midpoint, so both sides
			// describe about the same instant.
			s.Client = midpoint(s.Client, clients.Total())
		}
	}
	s.Self, s.SelfErr = procstat.Self()
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
	}
	for k, v := range b.Requests {
		m.Requests[k] = half(a.Requests[k], v)
	}
	for k, v := range b.Failures {
		m.Failures[k] = half(a.Failures[k], v)
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
	if instrumented {
		res.Client = d.ClientCounts()
		if ops > 0 {
			// Fan-out counts every notification that reached the client,
			// including those of watches the recipe had already abandoned
			// (ZooKeeper still delivers them): that is what the servers sent.
			res.PerOp[figures.WatchEvents.Key] = per(float64(d.WatchEvents + d.LateWatchEvents))
			res.PerOp[figures.WatchesArmed.Key] = per(float64(d.WatchesArmed))
			res.PerOp[figures.Requests.Key] = per(float64(d.TotalRequests()))
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
	case fillPartial(res, before, after):
		// Some member was down or restarted: res.Server sums the others,
		// with no per-operation figure and no client|server comparison.
	default:
		res.Server = after.Server.Delta(before.Server)
		if ops > 0 {
			for _, f := range figures.ServerPerOp() {
				if v, ok := res.Server[f.Metric]; ok {
					res.PerOp[f.Key] = per(v)
				}
			}
		}
		if instrumented && !m.sharded {
			counts := figures.Totals{WatchEvents: d.WatchEvents, LateWatchEvents: d.LateWatchEvents, Requests: d.Requests}
			for _, c := range figures.Checks() {
				if n := c.Note(res.Backend, counts, res.Server); n != "" {
					res.Notes = append(res.Notes, n)
				}
			}
		}
	}
	m.fillCost(res, before, after, baseRSS)
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

// jain is Jain's fairness index over xs: (Σx)² / (n Σx²), 1 when all are
// equal, 1/n when one client got everything; 0 when nothing succeeded.
func jain(xs []int64) float64 {
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

// errorSummary formats error kinds and counts in order: "a=1, b=2".
func errorSummary(m map[string]int64) string {
	var parts []string
	for _, k := range sortedKinds(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
