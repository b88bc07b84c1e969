package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// Target is what a variant must meet to "sustain" a client count.
type Target struct {
	// P99 bounds the 99th percentile of the latency histogram (default
	// 50 ms).
	P99 time.Duration
	// Rate, if > 0, is the throughput (operations per second) the variant
	// must keep up.
	Rate float64
	// Latency names the histogram; "" means each case's primary one
	// ("acquire" for locks, "failover" for failover...).
	Latency string
	// AtClients is the client count at which Demand is computed; 0 means
	// the largest measured one.
	AtClients int
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
}

// SeriesPlan is the plan of one workload, backend and variant.
type SeriesPlan struct {
	Series
	// Latency is the histogram the target applies to.
	Latency string `json:"latency"`
	// Fits by figure ID (figures.Figure.ID of figures.Fitted), only for
	// figures measured at two or more client counts.
	Fits    map[string]Fit `json:"fits"`
	Sustain Sustain        `json:"sustain"`
	Demand  *Demand        `json:"demand,omitempty"`
	// Headroom per measured case against the calibrated server capacity;
	// empty without a calibration.
	Headroom []Headroom `json:"headroom,omitempty"`
	// Excluded are the measured cases left out of Fits, Sustain and
	// Demand because the load generator, not the servers, was their limit.
	Excluded []Excluded `json:"excluded,omitempty"`
}

// Excluded is a case capacity planning left out, and why.
type Excluded struct {
	Clients int `json:"clients"`
	// Reason is the case's client-bound reasons and numbers
	// (results.ClientBound.Detail).
	Reason string `json:"reason"`
}

// Sustain answers: how many clients does the variant sustain under the
// target?
type Sustain struct {
	// Status: "interpolated" (a measured count meets the target and the
	// next does not), "extrapolated" (every measured count meets it; the
	// fit is projected), "beyond" (every measured count meets it and the
	// fit does not say where it stops), "none" (the smallest measured count
	// already fails), "not measured" (no latency recorded), "client-bound"
	// (every measured case was client-bound: SeriesPlan.Excluded).
	Status string `json:"status"`
	// Clients is the answer (fractional when interpolated or projected).
	Clients float64 `json:"clients"`
	// MeasuredOK is the largest measured client count that met the target
	// (0 if none).
	MeasuredOK int `json:"measured_ok"`
	// Text is the answer in words, for reports.
	Text string `json:"text"`
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
	// (1 / Calibration.HandoffBound), for lock workloads.
	HandoffShare float64 `json:"handoff_share,omitempty"`
}

// PlanCapacity makes the capacity plan for runs under target (zero fields take defaults).
func PlanCapacity(runs []*results.Run, target Target) (*Plan, error) {
	if target.P99 <= 0 {
		target.P99 = DefaultP99
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
	order, bySeries := Group(Cases(runs))
	for _, s := range order {
		sp, err := planSeries(s, bySeries[s], target, p.Calibrations[s.Backend])
		if err != nil {
			return nil, err
		}
		p.Series = append(p.Series, sp)
	}
	return p, nil
}

type point struct{ n, y float64 }

func planSeries(s Series, all []*Case, t Target, cal *results.Calibration) (*SeriesPlan, error) {
	sp := &SeriesPlan{Series: s, Latency: t.Latency, Fits: map[string]Fit{}}
	// A client-bound case measured the load generator: it answers no
	// capacity question.
	var cases []*Case
	for _, c := range all {
		if b := c.ClientBound(); b != nil {
			sp.Excluded = append(sp.Excluded, Excluded{Clients: c.Clients, Reason: b.Detail})
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
	sp.Sustain = sustain(points[figures.P99.ID()], points[figures.Throughput.ID()], sp.Fits, t)
	if len(sp.Excluded) > 0 {
		var ns []string
		for _, e := range sp.Excluded {
			ns = append(ns, fmt.Sprintf("N=%d", e.Clients))
		}
		left := fmt.Sprintf("%s left out: client-bound, the load generator was the limit (%s)", strings.Join(ns, ", "), sp.Excluded[0].Reason)
		if len(cases) == 0 {
			sp.Sustain = Sustain{Status: "client-bound", Text: "not answered: every measured case was client-bound; " + left}
		} else {
			sp.Sustain.Text += "; " + left
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
			if figures.UnitOf(s.Workload) == figures.Acquisition && cal.HandoffBound > 0 {
				h.HandoffShare = h.Throughput * cal.HandoffBound.Seconds()
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

// logInterp returns the x at which the segment (x0,y0)-(x1,y1) reaches y on
// log-log axes, where both costs and client counts usually grow by factors.
func logInterp(x0, y0, x1, y1, y float64) float64 {
	if y0 <= 0 || y1 <= 0 || y <= 0 || y0 == y1 {
		return x0 + (x1-x0)*(y-y0)/(y1-y0)
	}
	f := (math.Log(y) - math.Log(y0)) / (math.Log(y1) - math.Log(y0))
	return math.Exp(math.Log(x0) + f*(math.Log(x1)-math.Log(x0)))
}

func sustain(p99, tput []point, fits map[string]Fit, t Target) Sustain {
	target := Millis(t.P99)
	want := fmt.Sprintf("p99 ≤ %s ms", num(target))
	if t.Rate > 0 {
		want += fmt.Sprintf(" at ≥ %s ops/s", num(t.Rate))
	}
	if len(p99) == 0 {
		return Sustain{Status: "not measured", Text: "not measured: no latency recorded"}
	}
	slices.SortFunc(p99, func(a, b point) int { return cmp.Compare(a.n, b.n) })
	rate := map[float64]float64{}
	for _, p := range tput {
		rate[p.n] = p.y
	}
	meets := func(p point) bool {
		if p.y > target {
			return false
		}
		r, ok := rate[p.n]
		return t.Rate <= 0 || (ok && r >= t.Rate)
	}
	if !meets(p99[0]) {
		return Sustain{Status: "none", Text: fmt.Sprintf("none measured: already fails %s at the smallest measured N=%s (p99 %s ms)",
			want, num(p99[0].n), num(p99[0].y))}
	}
	for j := 1; j < len(p99); j++ {
		if meets(p99[j]) {
			continue
		}
		i := j - 1
		n := p99[j].n
		if p99[j].y > target {
			n = min(n, logInterp(p99[i].n, p99[i].y, p99[j].n, p99[j].y, target))
		}
		if t.Rate > 0 && rate[p99[j].n] < t.Rate {
			n = min(n, logInterp(p99[i].n, rate[p99[i].n], p99[j].n, rate[p99[j].n], t.Rate))
		}
		n = max(n, p99[i].n)
		return Sustain{Status: "interpolated", Clients: n, MeasuredOK: int(p99[i].n),
			Text: fmt.Sprintf("about %s clients (interpolated between measured N=%s, which meets %s, and N=%s, which does not)",
				num(math.Floor(n)), num(p99[i].n), want, num(p99[j].n))}
	}
	last := p99[len(p99)-1]
	s := Sustain{Status: "beyond", Clients: last.n, MeasuredOK: int(last.n)}
	// Every measured count meets the target: project the fits.
	n, ok := math.Inf(1), false
	var why []string
	if f, has := fits[figures.P99.ID()]; has && f.Grows() {
		if x, solved := f.Solve(target); solved && x > last.n {
			n, ok = x, true
			why = append(why, "p99 "+f.String())
		}
	}
	if f, has := fits[figures.Throughput.ID()]; has && t.Rate > 0 && f.Model != Constant && f.B < 0 {
		if x, solved := f.Solve(t.Rate); solved && x > last.n && x < n {
			n, ok = x, true
			why = []string{"throughput " + f.String()}
		}
	}
	if ok {
		s.Status, s.Clients = "extrapolated", n
		s.Text = fmt.Sprintf("at least %s clients (every measured N meets %s); about %s EXTRAPOLATED from the fit %s",
			num(last.n), want, num(math.Floor(n)), why[0])
		return s
	}
	s.Text = fmt.Sprintf("at least %s clients (every measured N meets %s); beyond that not measured",
		num(last.n), want)
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
