package analysis

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

func msStr(d time.Duration) string { return num(Millis(d)) + " ms" }

func pctStr(v float64) string { return num(100*v) + "%" }

// text is the interval as the plan prints it after a wait's source ("" if
// none was made).
func (i Interval) text() string {
	if i == (Interval{}) {
		return ""
	}
	return fmt.Sprintf("; %s to %s over %d resamples of the measured histograms (their sampling, not the model's error)", msStr(i[0]), msStr(i[1]), Replicates)
}

// TargetText is the target in words: "p99 ≤ 50 ms".
func (w Workload) TargetText() string {
	return fmt.Sprintf("p%s ≤ %s", num(w.Percentile), msStr(w.Bound))
}

// Write prints the answer, every number with where it came from.
func (a *PlanAnswer) Write(out io.Writer) error {
	p := a.Asked
	w := p.Workload
	model := Source{Kind: "model", What: fmt.Sprintf("simulation of %d acquisitions, seed %d", p.Sim.Acquisitions, w.Seed)}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s on %s: %s\n", w.Workload, p.Variant, p.Backend, a.Model)
	fmt.Fprintf(&b, "target: %s\n", w.TargetText())
	fmt.Fprintf(&b, "basis: %s, %s\n", p.Basis, p.Range)
	for _, s := range p.Skipped {
		fmt.Fprintf(&b, "left out: %s\n", s)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tvalue\tfrom\n")
	fmt.Fprintf(tw, "handoff (mean)\t%s\t%s\n", msStr(p.Handoff), p.Service)
	fmt.Fprintf(tw, "wait p50\t%s\t%s%s\n", p.wait(p.P50), model, p.P50Interval.text())
	fmt.Fprintf(tw, "wait p99\t%s\t%s%s\n", p.wait(p.P99), model, p.P99Interval.text())
	if w.Percentile != 50 && w.Percentile != 99 {
		fmt.Fprintf(tw, "wait p%s\t%s\t%s%s\n", num(w.Percentile), p.wait(p.AtTarget), model, p.TargetInterval.text())
	}
	fmt.Fprintf(tw, "acquisitions/s\t%s\t%s\n", num(p.Sim.Throughput), model)
	fmt.Fprintf(tw, "lock utilisation\t%s\t%s (offered %s)\n", pctStr(p.Sim.Utilisation), model, pctStr(p.Sim.Offered))
	fmt.Fprintf(tw, "clients waiting (mean)\t%s\t%s\n", num(p.Sim.MeanWaiting), model)
	for _, l := range p.Load {
		fmt.Fprintf(tw, "%s/s (%s)\t%s\t%s/acquisition (%s) × acquisitions/s (model)\n", l.Kind, l.Side, num(l.PerSec), num(l.PerAcquisition), l.Source)
	}
	tw.Flush()
	b.WriteString("\ncapacity, in acquisitions per second, first to saturate first:\n")
	tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "resource\tfull at acq/s\tshare now\tfrom\n")
	for _, r := range p.Resources {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, num(r.Capacity), pctStr(r.Share), r.Source)
	}
	tw.Flush()
	if p.Calibration == "" {
		fmt.Fprintf(&b, "no calibration in these results: server writes and reads have no capacity to set the load against (run a sweep with --calibrate)\n")
	}
	first := p.Resources[0]
	fmt.Fprintf(&b, "first to saturate: %s, at %s acquisitions/s; headroom %s\n", first.Name, num(first.Capacity), pctStr(p.Headroom))
	if p.Overloaded {
		fmt.Fprintf(&b, "OVERLOADED: the workload asks for %s of what the lock can serve (%s acquisitions/s scheduled, the lock passes at most %s/s): waits grow for as long as the load lasts\n",
			pctStr(p.Sim.Offered), num(w.Rate()), num(p.Resources[0].Capacity))
	}
	if p.Meets {
		fmt.Fprintf(&b, "answer: meets %s (p%s %s)", w.TargetText(), num(w.Percentile), msStr(p.AtTarget))
	} else {
		fmt.Fprintf(&b, "answer: does NOT meet %s (p%s %s)", w.TargetText(), num(w.Percentile), p.wait(p.AtTarget))
	}
	switch {
	case p.MaxClients == 0:
		fmt.Fprintf(&b, "; not even one client meets it at this hold and handoff: the nearest achievable is p%s %s with one client\n", num(w.Percentile), msStr(p.OneClient))
	case p.MaxClients > 0:
		fmt.Fprintf(&b, "; at most %d clients meet it at this per-client demand (model, searched up to %gx the largest measured N)\n", p.MaxClients, MaxExtrapolation)
	default:
		b.WriteString("\n")
	}
	if p.Cycled {
		b.WriteString("NOT SETTLED: the sweep's handoffs fall as its clients grow, so the simulated contention picks a faster case, which makes less contention, " +
			"and back: no measured case is consistent with the waits it gives; the answer is the worst state visited\n")
	}
	if o := p.OtherState; o != nil {
		fmt.Fprintf(&b, "TWO STATES: from the least contended case the simulation settles in a better one (%s waiters at a handoff, mean handoff %s of %s: wait p50 %s, p99 %s); "+
			"the measured handoff grows with the waiters (a herd's most of all), so the lock can stay in either: the answer above is the worse\n",
			num(o.WaitersAtHandoff), msStr(o.Handoff), o.Basis, msStr(o.P50), msStr(o.P99))
	}
	switch {
	case p.Overloaded:
	case p.Idle != nil:
		b.WriteString("note: the uncontended acquires above are measured at this rate, wake-ups included; the handoffs come from a closed-loop sweep, " +
			"measured with clients and servers kept busy, so the waits of queued acquisitions are a floor: check with --validate\n")
	case p.Service.Run == p.Basis.Run && p.Service.Case == p.Basis.Case:
		b.WriteString("note: the waits above come from a closed-loop sweep's handoffs, measured with clients and servers kept busy; " +
			"a workload that sleeps between acquisitions pays wake-ups they did not, so on a loaded machine these waits are a floor " +
			"(docs/results.md measured them 2 to 20 times low): pass one-client open-loop runs near this rate (zkbench run --clients 1 --rate R) or --service-from a short open-loop run at this duty cycle, and check with --validate\n")
	}
	b.WriteString(p.errorLine())
	if len(a.Others) > 0 {
		b.WriteString("\nevery variant at the same point (each from its own nearest measured case):\n")
		tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "variant\tclass\twait p50\twait p99\tmeets\tnotifications/s\twrites/s\tfirst to saturate\theadroom\tmax clients\tbasis\n")
		for _, q := range append([]*Prediction{p}, a.Others...) {
			meets := "no"
			if q.Meets {
				meets = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", q.Variant, q.Class, q.wait(q.P50), q.wait(q.P99), meets,
				q.loadText("notifications"), q.loadText("writes"), q.Resources[0].Name, pctStr(q.Headroom), q.MaxClients, q.Basis)
		}
		tw.Flush()
	}
	for _, l := range a.LeftOut {
		fmt.Fprintf(&b, "not compared: %s\n", l)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// wait prints a predicted wait, "unbounded" when overloaded.
func (p *Prediction) wait(d time.Duration) string {
	if p.Overloaded {
		return "unbounded"
	}
	return msStr(d)
}

func (p *Prediction) loadText(kind string) string {
	for _, l := range p.Load {
		if l.Kind == kind {
			return num(l.PerSec)
		}
	}
	return "—"
}
