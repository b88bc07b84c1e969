package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
)

// An uncontended acquire costs more the less often it happens: a process
// that sleeps between acquisitions, and a server that idles between them,
// pay wake-ups that a closed-loop case, kept busy, does not. Measured on a
// local ZooKeeper (one client, fair lock, docs/results.md "The model and
// its error"), its p50 goes from about 1 ms closed loop to 3 ms at 50
// acquisitions/s and 6.6 ms at 5/s. So where the results hold one-client
// open-loop runs (zkbench run --clients 1 --rate R), the plan draws its
// uncontended acquires from them at the workload's rate instead of from
// the closed-loop one-client case.

// idleCase is a one-client open-loop case and the rate it kept.
type idleCase struct {
	run  *results.Run
	c    *Case
	rate float64
}

// idleSet is one variant's idle cases, lowest rate first, and those left
// out with why.
type idleSet struct {
	ok      []idleCase
	skipped []string
}

// idleCases lists, by variant, the one-client open-loop cases of workload
// on backend that kept their schedule (within 5%) on a machine and client
// that were not the limit, lowest rate first, and the others with why
// they were left out.
func idleCases(runs []*results.Run, workload string, backend backends.Kind) map[string]*idleSet {
	out := map[string]*idleSet{}
	set := func(variant string) *idleSet {
		if out[variant] == nil {
			out[variant] = &idleSet{}
		}
		return out[variant]
	}
	for _, r := range runs {
		if r.Config.Rate <= 0 || r.Config.Think > 0 || r.Config.Workload != workload {
			continue
		}
		for _, c := range Cases([]*results.Run{r}) {
			if c.Backend != backend || c.Clients != 1 {
				continue
			}
			why := ""
			if h, err := c.Latency(c.PrimaryLatency()); err != nil || h == nil || h.TotalCount() == 0 {
				continue // nothing to draw from
			}
			tput, _ := c.Throughput()
			switch cb, x := c.ClientBound(), c.Loaded(); {
			case cb != nil:
				why = "client-bound, " + cb.Detail
			case x != nil:
				why = "loaded machine, " + x.Detail
			case tput < 0.95*r.Config.Rate:
				// Its latencies hold a queue of late starts.
				why = fmt.Sprintf("behind its schedule (%s of %s acquisitions/s)", num(tput), num(r.Config.Rate))
			}
			s := set(c.Variant)
			if why != "" {
				s.skipped = append(s.skipped, fmt.Sprintf("run %s case %s (one-client open loop): %s", r.ID, c.Key, why))
				continue
			}
			s.ok = append(s.ok, idleCase{run: r, c: c, rate: r.Config.Rate})
		}
	}
	for _, s := range out {
		slices.SortFunc(s.ok, func(a, b idleCase) int { return cmpFloat(a.rate, b.rate) })
	}
	return out
}

// offered is the acquisition rate the workload asks for over all of its
// clients, given n of them: the open loop's; a finite source's if no one
// ever waited, n/(Think+Hold), an upper bound. +Inf for a closed loop with
// neither (never drawn from idle runs).
func (w Workload) offered(n int) float64 {
	if w.Every > 0 {
		return float64(n) / w.Every.Seconds()
	}
	if t := (w.Think + w.Hold).Seconds(); t > 0 {
		return float64(n) / t
	}
	return math.Inf(1)
}

// idleSampler is the uncontended acquire at rate from cs (sorted by rate):
// between two measured rates, a mixture of their distributions weighted
// linearly in log rate; outside them, the nearest. ok is false when cs is
// empty.
//
// The sampler comes as a function: with a nil rand it returns the
// sampler, else a bootstrap resample of it (each case resampled, then
// mixed).
func idleSampler(cs []idleCase, rate float64) (s func(*rand.Rand) *Sampler, src Source, ok bool, err error) {
	if len(cs) == 0 {
		return nil, Source{}, false, nil
	}
	sampler := func(c idleCase) (*Sampler, error) {
		h, _ := c.c.Latency(c.c.PrimaryLatency())
		return NewSampler(h)
	}
	i := 0
	for i < len(cs) && cs[i].rate < rate {
		i++
	}
	if i < len(cs) && math.Abs(cs[i].rate-rate) <= 1e-6*rate {
		i++ // measured at the rate itself: that case alone
		cs = cs[:i]
	}
	var lo, hi idleCase
	switch {
	case i == 0:
		lo, hi = cs[0], cs[0]
	case i == len(cs):
		lo, hi = cs[len(cs)-1], cs[len(cs)-1]
	default:
		lo, hi = cs[i-1], cs[i]
	}
	a, err := sampler(lo)
	if err != nil {
		return nil, Source{}, false, err
	}
	if lo.c == hi.c || lo.rate == hi.rate {
		at := fmt.Sprintf("%s at %s acquisitions/s", lo.c.Key, num(lo.rate))
		if math.Abs(lo.rate-rate) > 1e-6*rate {
			at += ", the measured rate nearest the workload's (outside the measured range)"
		}
		src = Source{Kind: "measured", Run: lo.run.ID, Case: at}
		return resampled(a), src, true, nil
	}
	b, err := sampler(hi)
	if err != nil {
		return nil, Source{}, false, err
	}
	wHi := math.Log(rate/lo.rate) / math.Log(hi.rate/lo.rate)
	src = Source{Kind: "measured", Run: lo.run.ID + " and " + hi.run.ID,
		Case: fmt.Sprintf("%s at %s and %s acquisitions/s, mixed %.0f:%.0f (linear in log rate)", lo.c.Key, num(lo.rate), num(hi.rate), 100*(1-wHi), 100*wHi)}
	mixed := mixSamplers(a, b, wHi)
	return func(r *rand.Rand) *Sampler {
		if r == nil {
			return mixed
		}
		return mixSamplers(a.Resample(r), b.Resample(r), wHi)
	}, src, true, nil
}

// resampled is s as idleSampler's function: s itself with a nil rand, else
// a bootstrap resample.
func resampled(s *Sampler) func(*rand.Rand) *Sampler {
	return func(r *rand.Rand) *Sampler {
		if r == nil {
			return s
		}
		return s.Resample(r)
	}
}

// mixSamplers is the mixture that draws from b with probability wb and
// from a otherwise.
func mixSamplers(a, b *Sampler, wb float64) *Sampler {
	const scale = 1 << 40
	m := &Sampler{mean: time.Duration((1-wb)*float64(a.mean) + wb*float64(b.mean))}
	add := func(s *Sampler, w float64) {
		var prev int64
		for i := range s.cum {
			n := int64(math.Round(float64(s.cum[i]-prev) / float64(s.total) * w * scale))
			prev = s.cum[i]
			if n <= 0 {
				continue
			}
			m.total += n
			m.from = append(m.from, s.from[i])
			m.to = append(m.to, s.to[i])
			m.cum = append(m.cum, m.total)
		}
	}
	add(a, 1-wb)
	add(b, wb)
	return m
}

// idleNote is the plan's line on where its uncontended acquires come from.
func idleNote(p *Prediction) string {
	w := p.Workload
	rate := num(w.offered(w.Clients))
	if w.Every <= 0 {
		rate = "at most " + rate // a finite source's rate if no one ever waited
	}
	return fmt.Sprintf("uncontended acquires drawn at the workload's %s acquisitions/s from the one-client open-loop %s (%s)",
		rate, pluralRuns(p.Idle.Run), p.Idle.Case)
}

func pluralRuns(runs string) string {
	if strings.Contains(runs, " and ") {
		return "runs " + runs
	}
	return "run " + runs
}
