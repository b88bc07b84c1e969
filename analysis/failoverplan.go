package analysis

// PredictFailover answers an operator's question about leader election —
// N candidates, sessions of timeout T — when the leader's process dies:
// how long until another candidate acts as leader, and what the failover
// costs the servers.
//
// The model: a process that dies sends nothing more. The server last heard
// from its session Φ before the crash, Φ uniform on [0, T/3) (go-zookeeper
// pings every third of the session timeout; zkbench's etcd sessions send a
// keep-alive a third of the TTL after the last answer), and ends the
// session at the first check at or after T past that, Γ later, Γ uniform on
// [0, G): ZooKeeper expires sessions on tick boundaries (G = its tickTime),
// etcd looks for expired leases every 500 ms. Ending the session deletes
// the leader's node, and from there the handover H is what a failover
// whose session is closed takes, read off kept failover sweeps (kill
// close) between the two nearest candidate counts on log-log axes. So a
// failover takes T − Φ + Γ + H, between T − T/3 + min H and T + G + max H.

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// ModeFailover is the way of predicting a leader's failover
// (modelerror.md's row for it).
const ModeFailover = "failover"

// EtcdExpiryCheck is how often etcd's lessor looks for expired leases
// (server/lease/lessor.go, runLoop): an expired lease is revoked up to this
// long after its TTL ran out.
const EtcdExpiryCheck = 500 * time.Millisecond

// Kill modes of the failover workload the plan reads (workloads.KillClose,
// workloads.KillCrash; analysis does not import workloads).
const (
	killClose = "close"
	killCrash = "crash"
)

// TickGiven is FailoverAsk.TickFrom for a tick the operator gave.
const TickGiven = "given by --tick"

// FailoverAsk is an operator's election for PredictFailover.
type FailoverAsk struct {
	Workload string        `json:"workload"`
	Backend  backends.Kind `json:"backend"`
	Variant  string        `json:"variant"`
	// Candidates campaign; Timeout is their sessions' timeout
	// (ZooKeeper's session timeout, etcd's lease TTL).
	Candidates int           `json:"candidates"`
	Timeout    time.Duration `json:"session_timeout_ns"`
	// Tick is ZooKeeper's tickTime, the granularity of its session
	// expiry; TickFrom says where it came from. Not read on etcd.
	Tick     time.Duration `json:"tick_ns,omitempty"`
	TickFrom string        `json:"tick_from,omitempty"`
	// TickFor, if set, is the tick of servers granting sessions of a
	// timeout (zkbench's local clusters' rule), for the longest-timeout
	// search when Tick followed the timeout.
	TickFor func(time.Duration) time.Duration `json:"-"`
	// MaxSession is the longest session the ensemble grants (ZooKeeper's
	// default: 20 ticks; zkbench's clusters: 2 minutes). Not read on etcd.
	MaxSession time.Duration `json:"max_session_ns,omitempty"`
	// Percentile and Bound: the target, failover at Percentile ≤ Bound
	// (Bound 0: none given).
	Percentile float64       `json:"percentile,omitempty"`
	Bound      time.Duration `json:"bound_ns,omitempty"`
}

// Handover is how long a failover takes once the old leader's session has
// ended on the server: quantile points, and the p50's and p99's 90%
// intervals from the failovers counted.
type Handover struct {
	Min     time.Duration    `json:"min_ns"`
	P50     time.Duration    `json:"p50_ns"`
	P90     time.Duration    `json:"p90_ns"`
	P99     time.Duration    `json:"p99_ns"`
	Max     time.Duration    `json:"max_ns"`
	P50Span [2]time.Duration `json:"p50_interval_ns"`
	P99Span [2]time.Duration `json:"p99_interval_ns"`
}

// FailoverCounts are a failover's notifications and requests, client and
// server side.
type FailoverCounts struct {
	ClientNotifications float64 `json:"client_notifications"`
	ServerNotifications float64 `json:"server_notifications"`
	ClientRequests      float64 `json:"client_requests"`
	ServerRequests      float64 `json:"server_requests"`
}

// failoverCounts are the counts a plan prints and validates.
var failoverCounts = []countFigure[FailoverCounts]{
	{"notifications (client)", func(c FailoverCounts) float64 { return c.ClientNotifications }},
	{"notifications (server)", func(c FailoverCounts) float64 { return c.ServerNotifications }},
	{"requests (client)", func(c FailoverCounts) float64 { return c.ClientRequests }},
	{"requests (server)", func(c FailoverCounts) float64 { return c.ServerRequests }},
}

// FailoverPoint is one measured failover case (kill close) the model
// reads.
type FailoverPoint struct {
	Run        string `json:"run"`
	Case       string `json:"case"`
	Candidates int    `json:"candidates"`
	Failovers  int64  `json:"failovers"`
	Mode       string `json:"cluster_mode"`
	// Servers are the run's nodes, connections and step timeout, which
	// one basis and its validation share.
	Servers  ConfigServers  `json:"servers"`
	Handover Handover       `json:"handover"`
	Counts   FailoverCounts `json:"per_failover"`
}

// FailoverPrediction answers PredictFailover for one variant.
type FailoverPrediction struct {
	Ask     FailoverAsk     `json:"ask"`
	Backend backends.Kind   `json:"backend"`
	Basis   []FailoverPoint `json:"basis"`
	// Extrapolated says where the candidate count lies outside the basis.
	Extrapolated string `json:"extrapolated,omitempty"`
	// Timeout is the session's timeout as the server keeps it (etcd: in
	// whole seconds); Heartbeat the longest the server goes without
	// hearing from a live session (a third of it); Granularity is G.
	Timeout     time.Duration `json:"effective_timeout_ns"`
	Heartbeat   time.Duration `json:"heartbeat_ns"`
	Granularity time.Duration `json:"granularity_ns"`
	Handover    Handover      `json:"handover"`
	// P50 and P99 are the failover's, with intervals from the handover's;
	// Least and Most bound every failover.
	P50     time.Duration    `json:"p50_ns"`
	P99     time.Duration    `json:"p99_ns"`
	P50Span [2]time.Duration `json:"p50_interval_ns"`
	P99Span [2]time.Duration `json:"p99_interval_ns"`
	Least   time.Duration    `json:"least_ns"`
	Most    time.Duration    `json:"most_ns"`
	// BusyP50 and BusyP99 are a leader's that talked to the server until
	// it died (Φ = 0), the model's idle one's.
	BusyP50 time.Duration  `json:"busy_p50_ns"`
	BusyP99 time.Duration  `json:"busy_p99_ns"`
	Counts  FailoverCounts `json:"per_failover"`
	Meets   bool           `json:"meets"`
	// LongestTimeout is the longest session timeout that meets the
	// target (0: none down to the least the servers grant).
	LongestTimeout time.Duration `json:"longest_timeout_ns"`
}

// FailoverAnswer is PredictFailover's answer: the asked variant, and
// every other variant of the basis at the same point.
type FailoverAnswer struct {
	Asked  *FailoverPrediction   `json:"asked"`
	Others []*FailoverPrediction `json:"others,omitempty"`
	Left   []string              `json:"left_out,omitempty"`
}

// handoverOf is r's failover latency as a Handover.
func handoverOf(r *results.Result) (Handover, bool, error) {
	h, ok, err := recorded(r, figures.LatencyFailover)
	if !ok {
		return Handover{}, false, err
	}
	at := func(q float64) time.Duration { return time.Duration(h.ValueAtQuantile(q)) }
	return Handover{Min: time.Duration(h.Min()), P50: at(50), P90: at(90), P99: at(99), Max: time.Duration(h.Max()),
		P50Span: percentileSpan(h, 50), P99Span: percentileSpan(h, 99)}, true, nil
}

// failoverCountsOf are r's counts per failover.
func failoverCountsOf(r *results.Result) FailoverCounts {
	return FailoverCounts{ClientNotifications: r.PerOp[figures.WatchEvents.Key], ServerNotifications: r.PerOp[figures.ServerWatchEvents.Key],
		ClientRequests: r.PerOp[figures.Requests.Key], ServerRequests: r.PerOp[figures.ServerRequests.Key]}
}

// killOf is the kill mode run's failover cases ran with.
func killOf(run *results.Run) string {
	if k := run.Config.Params["kill"]; k != "" {
		return k
	}
	return killClose
}

// failoverPoints reads the usable failover cases (kill close) of runs, by
// backend and variant, and lists the others with why they were left out.
func failoverPoints(runs []*results.Run, workload string) (map[backends.Kind]map[string][]FailoverPoint, []string, error) {
	return planPoints(runs, workload, func(run *results.Run, r *results.Result, key string) (FailoverPoint, string, error) {
		if k := killOf(run); k != killClose {
			return FailoverPoint{}, fmt.Sprintf("kill %s (the handover is read from runs whose leader's session was closed)", k), nil
		}
		h, ok, err := handoverOf(r)
		if err != nil || !ok {
			return FailoverPoint{}, "no failover measured", err
		}
		return FailoverPoint{Run: run.ID, Case: key, Candidates: r.Clients,
			Failovers: r.Ops.Succeeded, Mode: run.ClusterMode, Servers: configServers(run), Handover: h, Counts: failoverCountsOf(r)}, "", nil
	})
}

// PredictFailover answers ask from the failover runs among runs.
func PredictFailover(runs []*results.Run, ask FailoverAsk) (*FailoverAnswer, error) {
	switch {
	case ask.Candidates < 2:
		return nil, fmt.Errorf("give --clients, the candidates (at least 2: a failover needs a second one)")
	case ask.Timeout <= 0:
		return nil, errors.New("give --session-timeout, the candidates' session timeout (ZooKeeper) or lease TTL (etcd)")
	case ask.Bound > 0 && ask.Percentile != 50 && ask.Percentile != 99:
		return nil, fmt.Errorf("--target p%s: a failover plan holds the failover's p50 or p99 (p50=..., p99=...)", num(ask.Percentile))
	}
	byKind, left, err := failoverPoints(runs, ask.Workload)
	if err != nil {
		return nil, err
	}
	kind, err := oneKind(byKind, ask.Backend, "failover (kill close)")
	if err != nil {
		if len(left) > 0 {
			err = fmt.Errorf("%w; left out: %s", err, strings.Join(left, "; "))
		}
		return nil, err
	}
	byVariant := byKind[kind]
	if len(byVariant[ask.Variant]) == 0 {
		return nil, fmt.Errorf("no usable %s failover case of variant %s (kill close) in the runs; they have %s: "+
			"make bench-plan-failover keeps a basis, or run zkbench run --workload failover --kill close --variants %s --clients 10,50,200", kind, ask.Variant,
			strings.Join(slices.Sorted(maps.Keys(byVariant)), ", "), ask.Variant)
	}
	ans := &FailoverAnswer{Left: left}
	for _, v := range append([]string{ask.Variant}, slices.Sorted(maps.Keys(byVariant))...) {
		if v == ask.Variant && ans.Asked != nil {
			continue
		}
		a := ask
		a.Variant = v
		p, err := predictFailover(kind, byVariant[v], a)
		if err != nil {
			if v == ask.Variant {
				return nil, err
			}
			ans.Left = append(ans.Left, fmt.Sprintf("variant %s: %v", v, err))
			continue
		}
		if ans.Asked == nil {
			ans.Asked = p
		} else {
			ans.Others = append(ans.Others, p)
		}
	}
	return ans, nil
}

// oneKind is the backend of the answer: asked, or the only one measured.
func oneKind[V any](by map[backends.Kind]V, asked backends.Kind, what string) (backends.Kind, error) {
	if asked != "" {
		if _, ok := by[asked]; !ok {
			return "", fmt.Errorf("%w: no usable %s case on %s in the runs", ErrNoData, what, asked)
		}
		return asked, nil
	}
	switch len(by) {
	case 0:
		return "", fmt.Errorf("%w: no usable %s case in the runs (make bench-plan-failover keeps a basis: zkbench run --workload failover --kill close --clients 10,50,200)", ErrNoData, what)
	case 1:
		for k := range by {
			return k, nil
		}
	}
	return "", fmt.Errorf("the runs hold %s cases of more than one backend: give --backend", what)
}

// serverTimeout is the timeout the server keeps for an asked one: etcd's
// lease TTL in whole seconds, at least its minimum.
func serverTimeout(kind backends.Kind, t time.Duration) time.Duration {
	if kind == backends.Etcd {
		return max(2*time.Second, (t + time.Second - 1).Truncate(time.Second))
	}
	return t
}

// granularity is G for kind: ZooKeeper's tick, etcd's expiry check.
func granularity(kind backends.Kind, tick time.Duration) time.Duration {
	if kind == backends.Etcd {
		return EtcdExpiryCheck
	}
	return tick
}

func predictFailover(kind backends.Kind, pts []FailoverPoint, ask FailoverAsk) (*FailoverPrediction, error) {
	switch {
	case kind == backends.Etcd && ask.TickFrom == TickGiven:
		return nil, errors.New("--tick is a ZooKeeper ensemble's: drop it (etcd looks for expired leases every 500 ms)")
	case kind == backends.Etcd:
		ask.Tick, ask.TickFrom, ask.TickFor, ask.MaxSession = 0, "", nil, 0
	case ask.Tick <= 0:
		return nil, errors.New("give --tick, the ensemble's tickTime (the granularity of its session expiry)")
	case ask.MaxSession <= 0:
		ask.MaxSession = 20 * ask.Tick
	}
	if kind == backends.ZooKeeper && (ask.Timeout < 2*ask.Tick || ask.Timeout > ask.MaxSession) {
		return nil, fmt.Errorf("a ZooKeeper ensemble of tick %v (%s) grants sessions of %v to %v, not %v: give a --session-timeout between them, or --tick your ensemble's tickTime",
			ask.Tick, ask.TickFrom, 2*ask.Tick, ask.MaxSession, ask.Timeout)
	}
	for _, p := range pts[1:] {
		if p.Servers != pts[0].Servers {
			return nil, fmt.Errorf("runs %s and %s ran different servers or connections (%+v, %+v): give one basis", pts[0].Run, p.Run, pts[0].Servers, p.Servers)
		}
	}
	slices.SortStableFunc(pts, func(a, b FailoverPoint) int { return a.Candidates - b.Candidates })
	var xs []float64
	var uniq []FailoverPoint
	for _, p := range pts {
		if len(uniq) > 0 && uniq[len(uniq)-1].Candidates == p.Candidates {
			uniq[len(uniq)-1] = p // a later run of the same count
			continue
		}
		uniq = append(uniq, p)
		xs = append(xs, float64(p.Candidates))
	}
	i, j, out := bracket(xs, float64(ask.Candidates))
	p := &FailoverPrediction{Ask: ask, Backend: kind, Basis: unique(uniq[i], uniq[j])}
	switch out {
	case "beyond":
		return nil, fmt.Errorf("%d candidates is beyond %vx the measured counts (%v to %v): add a count near it to the basis (zkbench run --workload failover --kill close --clients %d)",
			ask.Candidates, MaxExtrapolation, xs[0], xs[len(xs)-1], ask.Candidates)
	case "outside":
		p.Extrapolated = fmt.Sprintf("EXTRAPOLATED: %d candidates lies outside the measured counts (%v to %v)", ask.Candidates, xs[0], xs[len(xs)-1])
	}
	a, b := uniq[i], uniq[j]
	n := float64(ask.Candidates)
	at := func(f func(FailoverPoint) float64) float64 {
		return logInterp(float64(a.Candidates), f(a), float64(b.Candidates), f(b), n)
	}
	dur := func(f func(Handover) time.Duration) time.Duration {
		return time.Duration(at(func(p FailoverPoint) float64 { return float64(f(p.Handover)) }))
	}
	h := Handover{Min: dur(func(h Handover) time.Duration { return h.Min }), P50: dur(func(h Handover) time.Duration { return h.P50 }),
		P90: dur(func(h Handover) time.Duration { return h.P90 }), P99: dur(func(h Handover) time.Duration { return h.P99 }),
		Max:     dur(func(h Handover) time.Duration { return h.Max }),
		P50Span: [2]time.Duration{dur(func(h Handover) time.Duration { return h.P50Span[0] }), dur(func(h Handover) time.Duration { return h.P50Span[1] })},
		P99Span: [2]time.Duration{dur(func(h Handover) time.Duration { return h.P99Span[0] }), dur(func(h Handover) time.Duration { return h.P99Span[1] })}}
	// Read apart, the points may cross where the count is extrapolated:
	// keep them in order.
	h.P50 = max(h.P50, h.Min)
	h.P90 = max(h.P90, h.P50)
	h.P99 = max(h.P99, h.P90)
	h.Max = max(h.Max, h.P99)
	p.Handover = h
	for _, c := range failoverCounts {
		v := at(func(p FailoverPoint) float64 { return c.of(p.Counts) })
		switch c.figure {
		case "notifications (client)":
			p.Counts.ClientNotifications = v
		case "notifications (server)":
			p.Counts.ServerNotifications = v
		case "requests (client)":
			p.Counts.ClientRequests = v
		case "requests (server)":
			p.Counts.ServerRequests = v
		}
	}
	p.set(ask.Timeout, ask.Tick)
	if ask.Bound > 0 {
		p.Meets = p.at(ask.Percentile) <= ask.Bound
		p.LongestTimeout = p.longestTimeout()
	}
	return p, nil
}

// set computes p's failover figures for an asked timeout t and tick.
func (p *FailoverPrediction) set(t, tick time.Duration) {
	p.Timeout = serverTimeout(p.Backend, t)
	p.Heartbeat = p.Timeout / 3
	p.Granularity = granularity(p.Backend, tick)
	h := p.Handover
	p.P50, p.P99 = failoverQuantile(p.Timeout, p.Heartbeat, p.Granularity, h, 0.5), failoverQuantile(p.Timeout, p.Heartbeat, p.Granularity, h, 0.99)
	p.P50Span = [2]time.Duration{p.P50 - (h.P50 - h.P50Span[0]), p.P50 + (h.P50Span[1] - h.P50)}
	p.P99Span = [2]time.Duration{p.P99 - (h.P99 - h.P99Span[0]), p.P99 + (h.P99Span[1] - h.P99)}
	p.BusyP50, p.BusyP99 = failoverQuantile(p.Timeout, 0, p.Granularity, h, 0.5), failoverQuantile(p.Timeout, 0, p.Granularity, h, 0.99)
	p.Least = p.Timeout - p.Heartbeat + h.Min
	p.Most = p.Timeout + p.Granularity + h.Max
}

// at is p's failover at percentile q (50 or 99).
func (p *FailoverPrediction) at(q float64) time.Duration {
	if q >= 99 {
		return p.P99
	}
	return p.P50
}

// longestTimeout is the longest timeout that meets p's target, the tick
// following it where the asked one did (TickFor), searched in steps of
// 100 ms (etcd: whole seconds) over the timeouts the servers grant (etcd:
// 2 s up to ten minutes); 0 when even the least misses.
func (p *FailoverPrediction) longestTimeout() time.Duration {
	step, least, most := 100*time.Millisecond, 2*p.Ask.Tick, p.Ask.MaxSession
	tickAt := func(time.Duration) time.Duration { return p.Ask.Tick }
	switch {
	case p.Backend == backends.Etcd:
		step, least, most = time.Second, 2*time.Second, 10*time.Minute
	case p.Ask.TickFor != nil:
		tickAt, least = p.Ask.TickFor, step
	}
	grants := func(t time.Duration) bool { return p.Backend == backends.Etcd || t >= 2*tickAt(t) }
	meets := func(t time.Duration) bool {
		g := granularity(p.Backend, tickAt(t))
		t = serverTimeout(p.Backend, t)
		return failoverQuantile(t, t/3, g, p.Handover, p.Ask.Percentile/100) <= p.Ask.Bound
	}
	lo, hi := int((least+step-1)/step), int(most/step)
	for lo <= hi && !grants(time.Duration(lo)*step) {
		lo++
	}
	if lo > hi || !meets(time.Duration(lo)*step) {
		return 0
	}
	for lo < hi { // the last step that meets: failovers grow with the timeout
		mid := (lo + hi + 1) / 2
		if meets(time.Duration(mid) * step) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return time.Duration(lo) * step
}

// failoverQuantile is the q-th quantile (0 < q < 1) of T − Φ + Γ + H, Φ
// uniform on [0, beat), Γ uniform on [0, g), H the handover read as a
// piecewise-linear quantile function through its points.
func failoverQuantile(t, beat, g time.Duration, h Handover, q float64) time.Duration {
	const m = 400 // the handover's quantiles averaged over
	hs := make([]float64, m)
	for i := range hs {
		hs[i] = handoverQuantile(h, (float64(i)+0.5)/m)
	}
	cdf := func(x float64) float64 {
		var s float64
		for _, hv := range hs {
			s += cdfGammaMinusPhi(x-float64(t)-hv, float64(g), float64(beat))
		}
		return s / m
	}
	lo, hi := float64(t-beat+h.Min), float64(t+g+h.Max)
	for range 60 {
		mid := (lo + hi) / 2
		if cdf(mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Duration(hi)
}

// handoverQuantile reads h's quantile u on the line through its points.
func handoverQuantile(h Handover, u float64) float64 {
	us := []float64{0, 0.5, 0.9, 0.99, 1}
	vs := []float64{float64(h.Min), float64(h.P50), float64(h.P90), float64(h.P99), float64(h.Max)}
	for i := 1; i < len(us); i++ {
		if u <= us[i] {
			return vs[i-1] + (u-us[i-1])/(us[i]-us[i-1])*(vs[i]-vs[i-1])
		}
	}
	return vs[len(vs)-1]
}

// cdfGammaMinusPhi is P(Γ − Φ ≤ d), Γ uniform on [0, g), Φ uniform on
// [0, p): the share of the rectangle [0, g] × [0, p] below the line γ − φ
// = d, integrated in closed form over γ (for each γ, the share of φ at
// least γ − d).
func cdfGammaMinusPhi(d, g, p float64) float64 {
	share := func(gamma float64) float64 { return min(1, max(0, 1-(gamma-d)/p)) }
	if p <= 0 {
		if g <= 0 {
			return step(d >= 0)
		}
		return min(1, max(0, d/g))
	}
	if g <= 0 {
		return share(0)
	}
	// F is an antiderivative of share: 1 up to d, falling to 0 at d + p.
	F := func(x float64) float64 {
		switch {
		case x <= d:
			return x
		case x <= d+p:
			return x - (x-d)*(x-d)/(2*p)
		}
		return d + p/2
	}
	return (F(g) - F(0)) / g
}

func step(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Write prints the answer.
func (a *FailoverAnswer) Write(out io.Writer) error {
	p := a.Asked
	var b strings.Builder
	fmt.Fprintf(&b, "failover plan: %s %s, %d candidates, sessions of %v, the leader's process dying while it idles (its last word to the server a heartbeat)\n", p.Backend, p.Ask.Variant, p.Ask.Candidates, p.Ask.Timeout)
	fmt.Fprintf(&b, "model: failover = T − Φ + Γ + H: the session timeout T (%v as the server keeps it), less Φ since the server last heard from the leader "+
		"(uniform up to its heartbeat, %v = T/3), plus Γ until the server's next expiry check (uniform up to %v: %s), plus the handover H after the session ended, "+
		"read off the failover sweeps (kill close) between candidate counts on log-log axes\n", p.Timeout, p.Heartbeat.Round(time.Millisecond), p.Granularity, granularityWhy(p))
	for _, c := range p.Basis {
		fmt.Fprintf(&b, "basis: run %s, case %s (%d candidates, %d failovers)\n", c.Run, c.Case, c.Candidates, c.Failovers)
	}
	writeNotes(&b, p.Extrapolated, a.Left)
	tw := intervalTable(&b)
	fmt.Fprintf(tw, "failover p50 (ms)\t%s\t%s to %s\tmodel\n", msNum(p.P50), msNum(p.P50Span[0]), msNum(p.P50Span[1]))
	fmt.Fprintf(tw, "failover p99 (ms)\t%s\t%s to %s\tmodel\n", msNum(p.P99), msNum(p.P99Span[0]), msNum(p.P99Span[1]))
	if p.Backend == backends.ZooKeeper { // etcd renews a lease by keep-alives alone
		fmt.Fprintf(tw, "busy leader p50 (ms)\t%s\t\tmodel, Φ = 0: a leader whose requests reached the server until it died\n", msNum(p.BusyP50))
		fmt.Fprintf(tw, "busy leader p99 (ms)\t%s\t\tmodel, Φ = 0\n", msNum(p.BusyP99))
	}
	fmt.Fprintf(tw, "handover p50 (ms)\t%s\t%s to %s\tread off the basis\n", msNum(p.Handover.P50), msNum(p.Handover.P50Span[0]), msNum(p.Handover.P50Span[1]))
	fmt.Fprintf(tw, "handover p99 (ms)\t%s\t%s to %s\tread off the basis\n", msNum(p.Handover.P99), msNum(p.Handover.P99Span[0]), msNum(p.Handover.P99Span[1]))
	tw.Flush()
	fmt.Fprintln(&b, "(each interval: the handover's sampling spread from the failovers its cases counted; the timing terms are the model's, with these bounds:)")
	fmt.Fprintf(&b, "bounds: every failover between %s ms (T − T/3 + the least handover) and %s ms (T + %v + the longest handover)\n", msNum(p.Least), msNum(p.Most), p.Granularity)
	if p.Backend == backends.ZooKeeper {
		fmt.Fprintf(&b, "(on an ensemble, a candidate connected to a follower is heard by the leader only at the follower's next ping, every half tick: up to %v more; validated on one server)\n", p.Ask.Tick/2)
	}
	fmt.Fprintln(&b)
	tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "per failover (the handover's)\tpredicted\n")
	for _, c := range failoverCounts {
		fmt.Fprintf(tw, "%s\t%s\n", c.figure, num(c.of(p.Counts)))
	}
	tw.Flush()
	fmt.Fprintf(&b, "(the servers also answer every live candidate's heartbeats through the timeout: up to %d sessions, one every %v each)\n", p.Ask.Candidates-1, p.Heartbeat.Round(time.Millisecond))
	if p.Ask.Bound > 0 {
		verdict := "meets"
		if !p.Meets {
			verdict = "MISSES"
		}
		longest := fmt.Sprintf("the longest session timeout that meets it: %v", p.LongestTimeout)
		if p.LongestTimeout == 0 {
			longest = "no session timeout the servers grant meets it"
		}
		fmt.Fprintf(&b, "answer: %s failover p%s ≤ %s ms; %s (model; a shorter timeout also expires a live session whose pings run late, so keep it above your clients' worst pause)\n",
			verdict, num(p.Ask.Percentile), num(Millis(p.Ask.Bound)), longest)
	} else {
		fmt.Fprintf(&b, "answer: failover p50 %s ms, p99 %s ms; give --target (p50=BOUND or p99=BOUND) for whether a target holds and the longest session timeout that meets it\n", msNum(p.P50), msNum(p.P99))
	}
	b.WriteString(ModelErrorLine(ModeFailover))
	if len(a.Others) > 0 {
		fmt.Fprintln(&b)
		fmt.Fprintln(&b, "every variant at the same point:")
		tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "variant\tfailover p50\tfailover p99\thandover p99\tnotifications (server)\trequests (server)\tmeets\n")
		for _, o := range append([]*FailoverPrediction{p}, a.Others...) {
			yes := "yes"
			switch {
			case o.Ask.Bound == 0:
				yes = "—"
			case !o.Meets:
				yes = "no"
			}
			fmt.Fprintf(tw, "%s\t%s ms\t%s ms\t%s ms\t%s\t%s\t%s\n", o.Ask.Variant, msNum(o.P50), msNum(o.P99), msNum(o.Handover.P99),
				num(o.Counts.ServerNotifications), num(o.Counts.ServerRequests), yes)
		}
		tw.Flush()
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// granularityWhy says where p's granularity comes from.
func granularityWhy(p *FailoverPrediction) string {
	if p.Backend == backends.Etcd {
		return "etcd's lessor looks for expired leases every 500 ms"
	}
	return "ZooKeeper expires sessions on tick boundaries; the tick " + p.Ask.TickFrom
}

// ValidateFailover compares p with the case of run that measured its
// point: the failover workload with the leader's process dying (kill
// crash) at p's candidates and timeout.
func ValidateFailover(p *FailoverPrediction, run *results.Run) (*Validation, error) {
	param := "session_timeout"
	if p.Backend == backends.Etcd {
		param = "lease_ttl"
	}
	t, err := time.ParseDuration(run.Config.Params[param])
	switch {
	case killOf(run) != killCrash:
		return nil, fmt.Errorf("run %s killed its leaders by %s, the prediction is for a crash (--kill crash)", run.ID, killOf(run))
	case err != nil:
		return nil, fmt.Errorf("run %s has no %s: %v", run.ID, param, err)
	case serverTimeout(p.Backend, t) != p.Timeout:
		return nil, fmt.Errorf("run %s ran sessions of %v, the prediction is for %v", run.ID, t, p.Timeout)
	}
	r, v, h, err := validationOf(run, Key{Workload: p.Ask.Workload, Backend: p.Backend, Variant: p.Ask.Variant, Clients: p.Ask.Candidates},
		handoverOf, "measured no failover")
	if err != nil {
		return nil, err
	}
	v.add("failover p50 (ms)", Millis(p.P50), Millis(h.P50))
	v.add("failover p99 (ms)", Millis(p.P99), Millis(h.P99))
	v.add("least failover (ms)", Millis(p.Least), Millis(h.Min))
	v.add("longest failover (ms)", Millis(p.Most), Millis(h.Max))
	m := failoverCountsOf(r)
	for _, c := range failoverCounts {
		v.add(c.figure, c.of(p.Counts), c.of(m))
		if c.figure == "requests (server)" {
			// The servers also count the heartbeats of every candidate
			// through a crash's session timeout, which a closed
			// session's failover does not last.
			last := &v.Checks[len(v.Checks)-1]
			last.Error, last.NotCompared = math.NaN(), "it counts every candidate's heartbeats"
		}
	}
	return v, nil
}

// WriteFailoverPlan prints a failover plan and its validation (nil: none),
// as text or as one JSON object.
func WriteFailoverPlan(out io.Writer, ans *FailoverAnswer, val *Validation, asJSON bool) error {
	return writePlan(out, ans, val, asJSON, struct {
		*FailoverAnswer
		Validation *Validation `json:"validation,omitempty"`
	}{ans, val})
}
