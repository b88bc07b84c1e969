package analysis

// The measured cases a prediction stands on: the sweep's cases by run
// (basisCases), the one nearest a contention (nearest), the run a service
// is drawn from (serviceCase), and the server load their counts per
// acquisition give at the predicted rate (load).

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// basisCase is a measured case of one run.
type basisCase struct {
	run  *results.Run
	c    *Case
	cal  *results.Calibration
	calr string
}

// basisCases lists the cases of workload's closed-loop runs without think
// time, one run at a time
// (so each keeps its run), and the backends seen.
func basisCases(runs []*results.Run, workload string) ([]basisCase, []backends.Kind) {
	var out []basisCase
	var kinds []backends.Kind
	cals := map[backends.Kind]*results.Run{}
	for _, r := range runs {
		if r.Calibration != nil {
			k := cmp.Or(r.Calibration.Backend, r.Config.Backend)
			if _, ok := cals[k]; !ok {
				cals[k] = r
			}
		}
	}
	for _, r := range runs {
		if r.Config.Rate > 0 || r.Config.Think > 0 || r.Config.Workload != workload {
			continue // open-loop and think-time runs are what --validate measures (or --service-from), not the sweep
		}
		for _, c := range Cases([]*results.Run{r}) {
			b := basisCase{run: r, c: c}
			if cr := cals[c.Backend]; r.Calibration != nil {
				b.cal, b.calr = r.Calibration, r.ID
			} else if cr != nil {
				b.cal, b.calr = cr.Calibration, cr.ID
			}
			out = append(out, b)
			if !slices.Contains(kinds, c.Backend) {
				kinds = append(kinds, c.Backend)
			}
		}
	}
	return out, kinds
}

// serviceCase is run's case of variant on backend nearest in clients that
// recorded handoffs.
func serviceCase(run *results.Run, backend backends.Kind, variant string, clients int) (*Case, error) {
	var best *Case
	for _, c := range Cases([]*results.Run{run}) {
		if c.Backend != backend || c.Variant != variant {
			continue
		}
		if h, err := c.Latency(figures.LatencyHandoff); err != nil || h == nil || h.TotalCount() == 0 {
			continue
		}
		if best == nil || math.Abs(math.Log(float64(c.Clients)/float64(clients))) < math.Abs(math.Log(float64(best.Clients)/float64(clients))) {
			best = c
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: run %s has no %s case on %s with handoffs recorded to draw the service from", ErrNoData, run.ID, variant, backend)
	}
	return best, nil
}

// nearest is the case nearest in clients on a log scale (ties: more
// acquisitions measured).
func nearest(cs []basisCase, n float64) basisCase {
	best := cs[0]
	dist := func(b basisCase) float64 { return math.Abs(math.Log(float64(b.c.Clients) / n)) }
	for _, b := range cs[1:] {
		if d, bd := dist(b), dist(best); d < bd || (d == bd && b.c.Succeeded() > best.c.Succeeded()) {
			best = b
		}
	}
	return best
}

// load fills Load, Resources and Headroom: per-acquisition figures times
// the predicted acquisition rate, the basis case's for the acquisitions
// that queued and the one-client case's (free, if any) for the others.
func (p *Prediction) load(b basisCase, free *basisCase) {
	rate := p.Sim.Throughput
	per := map[string]float64{}
	q := p.Sim.QueuedShare
	src := p.Basis
	if free != nil {
		src.Case = fmt.Sprintf("%s for the %s that queued, %s for the rest", p.Basis.Case, pctStr(q), p.Free.Case)
		if free.run.ID != p.Basis.Run {
			src.Run += " and " + free.run.ID
		}
	}
	for _, k := range CostKinds {
		side := figures.Server.String()
		v, ok := perOpSum(b.c, k.Server)
		if !ok && k.Client != nil {
			side = figures.Client.String()
			v, ok = perOpSum(b.c, k.Client)
		}
		if !ok {
			continue
		}
		if free != nil {
			keys := k.Server
			if side == figures.Client.String() {
				keys = k.Client
			}
			if f, fok := perOpSum(free.c, keys); fok {
				v = q*v + (1-q)*f
			}
		}
		per[k.Kind] = v
		p.Load = append(p.Load, LoadFigure{Kind: k.Kind, PerAcquisition: v, PerSec: v * rate, Side: side, Source: src})
	}
	writes, wok := per["writes"]
	reads, rok := per["reads"]
	service := (p.Workload.Hold + p.Handoff).Seconds()
	p.Resources = append(p.Resources, Resource{Name: "the lock (one holder at a time)", Capacity: 1 / service,
		Source: Source{Kind: "derived", What: fmt.Sprintf("1 / (hold %s + mean handoff %s of run %s, case %s)", p.Workload.Hold, p.Handoff.Round(time.Microsecond), p.Service.Run, p.Service.Case)}})
	if b.cal != nil {
		p.Calibration = b.calr
		cs := Source{Kind: "calibration", Run: b.calr}
		if wok && writes > 0 && b.cal.WritesPerSec > 0 {
			p.Resources = append(p.Resources, Resource{Name: "server writes", Capacity: b.cal.WritesPerSec / writes, Source: cs})
		}
		if rok && reads > 0 && b.cal.ReadsPerSec > 0 {
			p.Resources = append(p.Resources, Resource{Name: "server reads", Capacity: b.cal.ReadsPerSec / reads, Source: cs})
		}
	}
	for i := range p.Resources {
		p.Resources[i].Share = rate / p.Resources[i].Capacity
	}
	slices.SortStableFunc(p.Resources, func(a, b Resource) int { return cmp.Compare(a.Capacity, b.Capacity) })
	p.Headroom = 1 - p.Resources[0].Share
}
