package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// Target is what a capacity answer is held against.
type Target struct {
	// P99 bounds the 99th percentile of an open-loop case's latency
	// (default 50 ms). Closed-loop latencies are never held against it.
	P99 time.Duration
	// Rate, if > 0, is the throughput (operations per second) the variant
	// must keep up.
	Rate float64
	// Latency names the histogram; "" means each case's primary one
	// ("acquire" for locks, "failover" for failover...).
	Latency figures.Latency
	// AtClients is the client count at which Demand is computed; 0 means
	// the largest measured one.
	AtClients int
	// Handoff bounds the p99 of one release's handoff to the next waiter
	// (default 10 ms): Waiters says how many waiters a lock can have
	// before its releases take longer.
	Handoff time.Duration
}

// Check refuses a target no case can be held against; its errors name
// the flags of `zkbench report`.
func (t Target) Check() error {
	switch {
	case t.P99 <= 0:
		return fmt.Errorf("--target-p99 must be positive, got %v", t.P99)
	case t.Handoff <= 0:
		return fmt.Errorf("--target-handoff must be positive, got %v", t.Handoff)
	case t.Rate < 0 || t.AtClients < 0:
		return errors.New("--target-rate and --at-clients must not be negative")
	}
	return nil
}

// DefaultHandoff is the default handoff target.
const DefaultHandoff = 10 * time.Millisecond

// Waiters answers, from closed-loop cases (where a case of N clients hands
// every release to one of N−1 waiters): how many waiters can one lock have
// before a release takes longer than Target.Handoff at p99?
type Waiters struct {
	// Points are the measured handoff percentiles by client count.
	Points []HandoffPoint `json:"points,omitempty"`
	// MaxWaiters is the answer in waiters (clients − 1), interpolated on
	// log-log axes between the last count that met the bound and the
	// first that did not; Status "interpolated", "all meet" (every
	// measured count met it: at least the largest), "none" (the smallest
	// measured count already fails) or "not measured".
	Status     string  `json:"status"`
	MaxWaiters float64 `json:"max_waiters"`
	Text       string  `json:"text"`
}

// HandoffPoint is one case's handoff percentiles.
type HandoffPoint struct {
	Clients int           `json:"clients"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	Runs    []string      `json:"runs"`
}

// waiters answers Waiters over cases (client-bound ones already left out).
func waiters(cases []*Case, bound time.Duration, runOf map[*results.Result]string) (Waiters, error) {
	var w Waiters
	for _, c := range cases {
		if c.Clients < 2 {
			continue // no waiter to hand to
		}
		p50, ok, err := c.Quantile(figures.LatencyHandoff, 50)
		if err != nil {
			return w, err
		}
		if !ok {
			continue
		}
		p99, _, _ := c.Quantile(figures.LatencyHandoff, 99)
		hp := HandoffPoint{Clients: c.Clients, P50: p50, P99: p99}
		for _, r := range c.Results {
			if id := runOf[r]; id != "" && !slices.Contains(hp.Runs, id) {
				hp.Runs = append(hp.Runs, id)
			}
		}
		w.Points = append(w.Points, hp)
	}
	want := fmt.Sprintf("handoff p99 ≤ %s ms", num(Millis(bound)))
	if len(w.Points) == 0 {
		w.Status, w.Text = "not measured", "not measured: no handoff recorded"
		return w, nil
	}
	first := w.Points[0]
	src := func(p HandoffPoint) string { return fmt.Sprintf("N=%d, run %s", p.Clients, strings.Join(p.Runs, ", ")) }
	if first.P99 > bound {
		w.Status = "none"
		w.Text = fmt.Sprintf("none measured: %d waiter(s) already exceed %s (p99 %s ms; %s)", first.Clients-1, want, num(Millis(first.P99)), src(first))
		return w, nil
	}
	for j := 1; j < len(w.Points); j++ {
		a, b := w.Points[j-1], w.Points[j]
		if b.P99 <= bound {
			continue
		}
		// Interpolate the waiter count on log-log axes.
		x0, x1 := math.Log(float64(a.Clients-1)), math.Log(float64(b.Clients-1))
		y0, y1, y := math.Log(float64(a.P99)), math.Log(float64(b.P99)), math.Log(float64(bound))
		n := float64(a.Clients - 1)
		if y1 != y0 {
			n = math.Exp(x0 + (y-y0)/(y1-y0)*(x1-x0))
		}
		w.Status, w.MaxWaiters = "interpolated", n
		w.Text = fmt.Sprintf("about %s waiters (interpolated between %d waiters, p99 %s ms, %s, and %d, p99 %s ms, %s)",
			num(math.Floor(n)), a.Clients-1, num(Millis(a.P99)), src(a), b.Clients-1, num(Millis(b.P99)), src(b))
		return w, nil
	}
	last := w.Points[len(w.Points)-1]
	w.Status, w.MaxWaiters = "all meet", float64(last.Clients-1)
	w.Text = fmt.Sprintf("at least %d waiters (every measured count meets %s; largest %s, p99 %s ms); beyond that not measured",
		last.Clients-1, want, src(last), num(Millis(last.P99)))
	return w, nil
}

// NotProjectable is Demand.RateSource when no rate can be projected.
const NotProjectable = "not projectable"

// DefaultP99 is the default latency target.
const DefaultP99 = 50 * time.Millisecond

// Plan is the capacity-planning answer for a set of runs.
type Plan struct {
	Target Target `json:"target"`
	// Series in the order of Cases.
	Series []*SeriesPlan `json:"series"`
	// Calibrations by backend, from the runs that carry one.
	Calibrations map[backends.Kind]*results.Calibration `json:"calibrations,omitempty"`
	// OpenLoop are the open-loop and think-time cases, the measured
	// answers to latency targets.
	OpenLoop []OpenLoopCase `json:"open_loop,omitempty"`
	// USL fits each series' closed-loop throughput (FitUSLs).
	USL []*USLFit `json:"usl,omitempty"`
}

// SeriesPlan is the plan of one workload, backend and variant.
type SeriesPlan struct {
	Series
	// Unit is the series' unit operation.
	Unit figures.Unit `json:"unit"`
	// Latency is the histogram the target applies to.
	Latency figures.Latency `json:"latency"`
	// Fits by figure ID (figures.Figure.ID of figures.Fitted), only for
	// figures measured at two or more client counts.
	Fits       map[string]Fit `json:"fits"`
	Saturation Saturation     `json:"saturation"`
	// Waiters answers the waiters-per-lock question (lock workloads).
	Waiters *Waiters `json:"waiters,omitempty"`
	Demand  *Demand  `json:"demand,omitempty"`
	// Headroom per measured case against the calibrated server capacity;
	// empty without a calibration.
	Headroom []Headroom `json:"headroom,omitempty"`
	// Excluded are the measured cases left out of Fits, Saturation and
	// Demand because the load generator, not the servers, was their limit,
	// or other processes loaded the machine.
	Excluded []Excluded `json:"excluded,omitempty"`
}

// Excluded is a case capacity planning left out, and why.
type Excluded struct {
	Clients int `json:"clients"`
	// Reason is the case's client-bound reasons and numbers
	// (results.ClientBound.Detail), or with Loaded its loaded-machine
	// detail (results.Loaded.Detail).
	Reason string `json:"reason"`
	Loaded bool   `json:"loaded,omitempty"`
}

// Saturation answers, for a closed-loop sweep, how much the servers gave:
// the highest throughput measured (a closed loop with no think time keeps
// every client asking, so its throughput is the recipe's capacity on that
// cluster; its latency is N × the handoff by construction and answers no
// latency question: see OpenLoop and Predict for those), and what one
// operation cost at that point.
type Saturation struct {
	// Status: "measured", "not measured" (no throughput), or, when every
	// case was left out (SeriesPlan.Excluded), "client-bound", "loaded" or
	// "client-bound or loaded".
	Status string `json:"status"`
	// Throughput is the highest mean throughput over the cases, at Clients.
	Throughput float64 `json:"throughput"`
	Clients    int     `json:"clients"`
	// Runs are the run IDs of that case's results.
	Runs []string `json:"runs,omitempty"`
	// Cost per operation at that case by kind ("requests", "writes",
	// "reads", "notifications", "bytes"): server-side counts where the
	// servers were scraped, else client-side; CostSide says which.
	Cost     map[string]float64 `json:"cost,omitempty"`
	CostSide map[string]string  `json:"cost_side,omitempty"`
	// Text is the answer in words, for reports.
	Text string `json:"text"`
}

// CostKinds are Saturation.Cost's kinds in the order reports print them,
// each with its server-side figure keys and the client-side fallback.
var CostKinds = []struct {
	Kind           string
	Server, Client []string
}{
	{"requests", []string{figures.ServerRequests.Key}, []string{figures.Requests.Key}},
	{"writes", []string{figures.ServerWrites.Key}, nil},
	{"reads", []string{figures.ServerReads.Key}, nil},
	{"notifications", []string{figures.ServerWatchEvents.Key}, []string{figures.WatchEvents.Key}},
	{"bytes", []string{figures.ServerBytesSent.Key, figures.ServerBytesReceived.Key}, []string{figures.BytesSent.Key, figures.BytesReceived.Key}},
}

// perOpSum is the sum of c's per-operation figures keys; false if none
// was measured.
func perOpSum(c *Case, keys []string) (float64, bool) {
	var v float64
	var ok bool
	for _, k := range keys {
		if x, has := c.PerOp(k); has {
			v, ok = v+x, true
		}
	}
	return v, ok
}

// OpenLoopCase is a measured answer to a latency question: a case of an
// open-loop run (zkbench run --rate), whose latency counts from the
// scheduled start, or of a closed loop with think time (--think: N
// workers, each asking again a think time after its release), whose
// latency counts from each ask.
type OpenLoopCase struct {
	Key
	Run string `json:"run"`
	// Rate is the open loop's scheduled rate; 0 for a think-time run.
	Rate  float64       `json:"rate"`
	Think time.Duration `json:"think_ns,omitempty"`
	Hold  time.Duration `json:"hold_ns"`
	// Latency is the histogram the target applies to (Target.Latency, else
	// the case's primary latency); P50 and P99 its percentiles, zero when
	// the case did not record it (NotRecorded). PrimaryLatency is the
	// case's primary latency, the one zkbench plan's model predicts.
	Latency        figures.Latency `json:"latency"`
	PrimaryLatency figures.Latency `json:"primary_latency"`
	NotRecorded    bool            `json:"not_recorded,omitempty"`
	P50            time.Duration   `json:"p50_ns"`
	P99            time.Duration   `json:"p99_ns"`
	// Throughput achieved (below Rate when the servers could not keep up).
	Throughput float64 `json:"throughput"`
	Meets      bool    `json:"meets"`
	// ClientBound is the case's client-bound detail ("" when it was not);
	// Loaded its loaded-machine detail.
	ClientBound string `json:"client_bound,omitempty"`
	Loaded      string `json:"loaded,omitempty"`
}

// Demand is the server load a variant needs at a client count.
type Demand struct {
	Clients      int  `json:"clients"`
	Extrapolated bool `json:"extrapolated"`
	// Rate is the operation rate assumed: the target's Rate, else the
	// measured (or fitted) throughput at Clients. RateSource says which:
	// "target", "measured", "fit", or NotProjectable when the fitted
	// throughput at Clients is not positive (Rate is then 0).
	Rate       float64 `json:"rate"`
	RateSource string  `json:"rate_source"`
	// RequestsPerOp and WritesPerOp are server-side when the servers were
	// scraped, else client-side (RequestsSide says which).
	RequestsPerOp float64 `json:"requests_per_op"`
	WritesPerOp   float64 `json:"writes_per_op,omitempty"`
	RequestsSide  string  `json:"requests_side"`
	// RequestsPerSec = Rate · RequestsPerOp; WritesPerSec likewise.
	RequestsPerSec float64 `json:"requests_per_sec"`
	WritesPerSec   float64 `json:"writes_per_sec,omitempty"`
	// WriteShare is WritesPerSec over the calibrated write capacity (0
	// without a calibration).
	WriteShare float64 `json:"write_share,omitempty"`
}

// Headroom sets one measured case against the calibrated capacity.
type Headroom struct {
	Clients    int     `json:"clients"`
	Throughput float64 `json:"throughput"`
	// ServerWritesPerSec measured during the case, and its share of the
	// calibrated write capacity.
	ServerWritesPerSec float64 `json:"server_writes_per_sec,omitempty"`
	WriteShare         float64 `json:"write_share,omitempty"`
	// HandoffShare is throughput over the herd-free handoff bound
	// (1 / Calibration.Bound), for lock workloads.
	HandoffShare float64 `json:"handoff_share,omitempty"`
}

// PlanCapacity makes the capacity plan for runs under target (zero fields take defaults).
func PlanCapacity(runs []*results.Run, target Target) (*Plan, error) {
	if target.P99 <= 0 {
		target.P99 = DefaultP99
	}
	if target.Handoff <= 0 {
		target.Handoff = DefaultHandoff
	}
	if err := checkLatencyRecorded(runs, target.Latency); err != nil {
		return nil, err
	}
	p := &Plan{Target: target, Calibrations: map[backends.Kind]*results.Calibration{}}
	for _, r := range runs {
		if r.Calibration != nil {
			k := r.Calibration.Backend
			if k == "" {
				k = r.Config.Backend
			}
			if _, ok := p.Calibrations[k]; !ok {
				p.Calibrations[k] = r.Calibration
			}
		}
	}
	runOf := map[*results.Result]string{}
	var closed []*results.Run
	for _, r := range runs {
		for i := range r.Results {
			runOf[&r.Results[i]] = r.ID
		}
		if r.Config.Rate > 0 || r.Config.Think > 0 {
			// Their throughput is their schedule, not a capacity; their
			// latency answers a latency question.
			if err := p.openLoop(r); err != nil {
				return nil, err
			}
		} else {
			closed = append(closed, r)
		}
	}
	order, bySeries := Group(Cases(closed))
	for _, s := range order {
		sp, err := planSeries(s, bySeries[s], target, p.Calibrations[s.Backend], runOf)
		if err != nil {
			return nil, err
		}
		p.Series = append(p.Series, sp)
	}
	p.USL = FitUSLs(closed)
	return p, nil
}

// openLoop adds the cases of open-loop or think-time run r.
func (p *Plan) openLoop(r *results.Run) error {
	for _, c := range Cases([]*results.Run{r}) {
		o := OpenLoopCase{Key: c.Key, Run: r.ID, Rate: r.Config.Rate, Think: r.Config.Think, Hold: r.Config.Hold,
			Latency: cmp.Or(p.Target.Latency, c.PrimaryLatency()), PrimaryLatency: c.PrimaryLatency()}
		o.NotRecorded = !slices.Contains(c.LatencyNames(), o.Latency)
		o.Throughput, _ = c.Throughput()
		var err error
		if o.P50, _, err = c.Quantile(o.Latency, 50); err != nil {
			return err
		}
		var ok bool
		if o.P99, ok, err = c.Quantile(o.Latency, 99); err != nil {
			return err
		}
		o.Meets = ok && o.P99 <= p.Target.P99
		if b := c.ClientBound(); b != nil {
			o.ClientBound = b.Detail
			o.Meets = false
		}
		if x := c.Loaded(); x != nil {
			o.Loaded = x.Detail
			o.Meets = false
		}
		p.OpenLoop = append(p.OpenLoop, o)
	}
	return nil
}

type point struct{ n, y float64 }

func planSeries(s Series, all []*Case, t Target, cal *results.Calibration, runOf map[*results.Result]string) (*SeriesPlan, error) {
	sp := &SeriesPlan{Series: s, Latency: t.Latency, Fits: map[string]Fit{}}
	unit := figures.Operation
	if len(all) > 0 {
		unit = all[0].Unit()
	}
	sp.Unit = unit
	// A client-bound case measured the load generator, a loaded one a
	// shared machine: neither answers a capacity question.
	var cases []*Case
	for _, c := range all {
		if b := c.ClientBound(); b != nil {
			sp.Excluded = append(sp.Excluded, Excluded{Clients: c.Clients, Reason: b.Detail})
			continue
		}
		if x := c.Loaded(); x != nil {
			sp.Excluded = append(sp.Excluded, Excluded{Clients: c.Clients, Reason: x.Detail, Loaded: true})
			continue
		}
		cases = append(cases, c)
	}
	if sp.Latency == "" && len(cases) > 0 {
		sp.Latency = cases[0].PrimaryLatency()
	}
	points := map[string][]point{}
	for _, g := range figures.Fitted() {
		if g.Kind == figures.Quantile {
			if sp.Latency == "" {
				continue // no latency recorded: nothing to fit
			}
			g = g.ForLatency(sp.Latency)
		}
		for _, c := range cases {
			v, ok, err := c.Value(g)
			if err != nil {
				return nil, err
			}
			if ok {
				points[g.ID()] = append(points[g.ID()], point{float64(c.Clients), v})
			}
		}
		if f, err := fitPoints(points[g.ID()]); err == nil {
			sp.Fits[g.ID()] = f
		}
	}
	sp.Saturation = saturation(cases, runOf)
	if unit == figures.Acquisition {
		w, err := waiters(cases, t.Handoff, runOf)
		if err != nil {
			return nil, err
		}
		sp.Waiters = &w
	}
	if len(sp.Excluded) > 0 {
		left, status := leftOut(sp.Excluded)
		if len(cases) == 0 {
			sp.Saturation = Saturation{Status: status, Text: "not answered: every measured case was " + status + "; " + left}
		} else {
			sp.Saturation.Text += "; " + left
		}
	}
	sp.Demand = demand(cases, sp.Fits, points, t, cal)
	if cal != nil {
		for _, c := range cases {
			h := Headroom{Clients: c.Clients}
			h.Throughput, _ = c.Throughput()
			if w, ok := c.ServerRate(backends.MetricWrites); ok && cal.WritesPerSec > 0 {
				h.ServerWritesPerSec, h.WriteShare = w, w/cal.WritesPerSec
			}
			if unit == figures.Acquisition && cal.Bound() > 0 {
				h.HandoffShare = h.Throughput * cal.Bound().Seconds()
			}
			sp.Headroom = append(sp.Headroom, h)
		}
	}
	return sp, nil
}

func fitPoints(pts []point) (Fit, error) {
	n := make([]float64, len(pts))
	y := make([]float64, len(pts))
	for i, p := range pts {
		n[i], y[i] = p.n, p.y
	}
	return FitGrowth(n, y)
}

// saturation is the case of highest throughput and its cost per operation.
func saturation(cases []*Case, runOf map[*results.Result]string) Saturation {
	var best *Case
	var top float64
	for _, c := range cases {
		if v, ok := c.Throughput(); ok && (best == nil || v > top) {
			best, top = c, v
		}
	}
	if best == nil {
		return Saturation{Status: "not measured", Text: "not measured: no throughput recorded"}
	}
	s := Saturation{Status: "measured", Throughput: top, Clients: best.Clients, Cost: map[string]float64{}, CostSide: map[string]string{}}
	for _, r := range best.Results {
		if id := runOf[r]; id != "" && !slices.Contains(s.Runs, id) {
			s.Runs = append(s.Runs, id)
		}
	}
	var costs []string
	for _, k := range CostKinds {
		side := figures.Server.String()
		v, ok := perOpSum(best, k.Server)
		if !ok && k.Client != nil {
			side = figures.Client.String()
			v, ok = perOpSum(best, k.Client)
		}
		if ok {
			s.Cost[k.Kind], s.CostSide[k.Kind] = v, side
			costs = append(costs, fmt.Sprintf("%s %s", num(v), k.Kind))
		}
	}
	s.Text = fmt.Sprintf("peak %s %ss/s at N=%d (measured, run %s, case %s)", num(top), best.Unit(), best.Clients, strings.Join(s.Runs, ", "), best.Key)
	if len(costs) > 0 {
		s.Text += "; per " + string(best.Unit()) + " there: " + strings.Join(costs, ", ")
	}
	return s
}

func demand(cases []*Case, fits map[string]Fit, points map[string][]point, t Target, cal *results.Calibration) *Demand {
	if len(cases) == 0 {
		return nil
	}
	n := t.AtClients
	maxN := cases[len(cases)-1].Clients
	if n <= 0 {
		n = maxN
	}
	d := &Demand{Clients: n}
	// value reads figure id at n: measured if n was measured, else the fit.
	value := func(id string) (float64, bool, bool) {
		for _, p := range points[id] {
			if p.n == float64(n) {
				return p.y, true, false
			}
		}
		if f, ok := fits[id]; ok {
			v := f.At(float64(n))
			return v, !math.IsNaN(v), f.Extrapolated(float64(n))
		}
		return 0, false, false
	}
	var ok, extra bool
	d.RequestsSide = figures.Server.String()
	d.RequestsPerOp, ok, extra = value(figures.ServerRequests.ID())
	if !ok {
		d.RequestsSide = figures.Client.String()
		d.RequestsPerOp, ok, extra = value(figures.Requests.ID())
	}
	if !ok {
		return nil
	}
	d.Extrapolated = extra
	if w, okw, ex := value(figures.ServerWrites.ID()); okw {
		d.WritesPerOp = w
		d.Extrapolated = d.Extrapolated || ex
	}
	if t.Rate > 0 {
		d.Rate, d.RateSource = t.Rate, "target"
	} else {
		r, okr, ex := value(figures.Throughput.ID())
		if !okr {
			return nil
		}
		d.Rate, d.RateSource = r, "measured"
		if _, measured := slices.BinarySearchFunc(cases, n, func(c *Case, n int) int { return c.Clients - n }); !measured {
			d.RateSource = "fit"
			d.Extrapolated = d.Extrapolated || ex
		}
		if d.Rate <= 0 {
			// A falling throughput line projected past zero says nothing
			// about the load at n.
			d.Rate, d.RateSource = 0, NotProjectable
		}
	}
	d.RequestsPerSec = d.Rate * d.RequestsPerOp
	d.WritesPerSec = d.Rate * d.WritesPerOp
	if cal != nil && cal.WritesPerSec > 0 && d.WritesPerSec > 0 {
		d.WriteShare = d.WritesPerSec / cal.WritesPerSec
	}
	return d
}

// leftOut says which cases capacity planning left out and why, and the
// status of a sweep that has nothing else: "client-bound", "loaded" or
// both.
func leftOut(excluded []Excluded) (text, status string) {
	var bound, loaded []string
	var boundWhy, loadedWhy string
	for _, e := range excluded {
		n := fmt.Sprintf("N=%d", e.Clients)
		switch {
		case e.Loaded:
			loaded = append(loaded, n)
			loadedWhy = cmp.Or(loadedWhy, e.Reason)
		default:
			bound = append(bound, n)
			boundWhy = cmp.Or(boundWhy, e.Reason)
		}
	}
	var parts, statuses []string
	if len(bound) > 0 {
		parts = append(parts, fmt.Sprintf("%s left out: client-bound, the load generator was the limit (%s)", strings.Join(bound, ", "), boundWhy))
		statuses = append(statuses, "client-bound")
	}
	if len(loaded) > 0 {
		parts = append(parts, fmt.Sprintf("%s left out: measured on a loaded machine (%s)", strings.Join(loaded, ", "), loadedWhy))
		statuses = append(statuses, "loaded")
	}
	return strings.Join(parts, "; "), strings.Join(statuses, " or ")
}

// checkLatencyRecorded refuses a latency target (--latency) on a histogram
// that no case of runs recorded: the plan would fall back on nothing.
func checkLatencyRecorded(runs []*results.Run, l figures.Latency) error {
	if l == "" {
		return nil
	}
	var have []string
	for _, r := range runs {
		for i := range r.Results {
			recorded := r.Results[i].LatencyNames()
			if slices.Contains(recorded, l) {
				return nil
			}
			for _, name := range recorded {
				if !slices.Contains(have, string(name)) {
					have = append(have, string(name))
				}
			}
		}
	}
	slices.Sort(have)
	return fmt.Errorf("--latency %s: no case of these runs recorded it; they recorded %s", l, cmp.Or(strings.Join(have, ", "), "no latency"))
}
