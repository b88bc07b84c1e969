// Package report turns results files into a capacity-planning report: a
// self-contained HTML page (plots inlined as PNG) and a Markdown twin with
// the same text and numbers. Both are rendered from one Document so they
// never disagree: setup and environment, findings at a glance, the summary
// tables, the plots, and the capacity-planning section.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/plots"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// Document is a report as a list of blocks, rendered by Markdown and HTML.
type Document struct {
	Title  string
	Blocks []Block
}

// Block is one of Heading, Para, List, Table or Image.
type Block interface{ block() }

// Heading of level 2 (sections) or 3 (subsections).
type Heading struct {
	Level int
	Text  string
}

// Para is a paragraph of plain text. Warning paragraphs stand out.
type Para struct {
	Text    string
	Warning bool
}

// List is a bulleted list.
type List struct{ Items []string }

// Table has a header row; cells are plain text.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// Image is a figure of the report. Its PNG is drawn when a renderer needs
// it (Document.RenderImages): the Markdown twin only names the file.
type Image struct {
	Name    string // file name without extension
	Title   string
	Caption string
	Chart   *plots.Chart
	PNG     []byte // nil until rendered
}

func (Heading) block() {}
func (Para) block()    {}
func (List) block()    {}
func (Table) block()   {}
func (Image) block()   {}

// NotMeasured is printed in place of a figure nobody measured.
const NotMeasured = "—"

// Options configure a report.
type Options struct {
	// Title of the report (default "zkbench report").
	Title string
	// Target for capacity planning (zero fields take capacity's defaults).
	Target analysis.Target
	// NoPlots leaves the plots out (faster; for tests of the tables).
	NoPlots bool
}

// Build makes the report of runs.
func Build(runs []*results.Run, opts Options) (*Document, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("report: no results")
	}
	d := &Document{Title: opts.Title}
	if d.Title == "" {
		d.Title = "zkbench report"
	}
	plan, err := analysis.PlanCapacity(runs, opts.Target)
	if err != nil {
		return nil, err
	}
	cases := analysis.Cases(runs)
	if w := plots.Warning(runs); w != "" {
		d.add(Para{Text: "Warning: " + w + ".", Warning: true})
	}
	d.add(Para{Text: fmt.Sprintf("Generated from %d results file(s): %s.", len(runs), strings.Join(runIDs(runs), ", "))})
	d.glance(cases, plan)
	d.setup(runs)
	if err := d.summaries(cases); err != nil {
		return nil, err
	}
	d.work(cases)
	d.handoffPath(runs, cases)
	if !opts.NoPlots {
		if err := d.plots(runs); err != nil {
			return nil, err
		}
	}
	d.capacity(plan, runs)
	d.watchers(runs, plan.Target) // the config workload's watchers within a target
	d.configChecks(runs)          // config cases beside the config model
	d.failovers(runs)             // crashed leaders beside the failover model
	d.notes(runs, cases)
	return d, nil
}

func (d *Document) add(b ...Block) { d.Blocks = append(d.Blocks, b...) }

func runIDs(runs []*results.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// Num prints v with 4 significant digits and no exponent: the one number
// format of every table (parsed back by the report's tests).
func Num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return NotMeasured
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	if r == 0 {
		return "0"
	}
	if math.Abs(r) < 1e-4 {
		return strconv.FormatFloat(r, 'g', 4, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

func pct(v float64) string { return Num(100*v) + "%" }

func ms(d time.Duration) string { return Num(analysis.Millis(d)) }

// modelled is zkbench plan's prediction of an open-loop or think-time lock
// case from the closed-loop sweeps (and the one-client idle runs) among
// runs, and the model's measured error on the kept validation grid for the
// way it was made (analysis/modelerror.md); or why there is none.
func modelled(runs []*results.Run, o analysis.OpenLoopCase, t analysis.Target) (model, modelErr string) {
	if !slices.Contains(workloads.Planned(), o.Workload) {
		return "—", "—" // zkbench plan models one lock's queue, not this workload
	}
	if o.Latency != o.PrimaryLatency {
		return "not predicted: the model predicts " + string(o.PrimaryLatency) + ", not " + string(o.Latency), NotMeasured
	}
	w := analysis.Workload{Workload: o.Workload, Backend: o.Backend, Variant: o.Variant, Clients: o.Clients, Think: o.Think, Hold: o.Hold,
		Percentile: 99, Bound: t.P99, Acquisitions: 50_000}
	if o.Rate > 0 {
		w.Think, w.Every = 0, time.Duration(float64(o.Clients)/o.Rate*float64(time.Second))
	}
	// The run itself is not a basis of its own prediction (a one-client
	// open-loop run would be its own idle run).
	others := slices.DeleteFunc(slices.Clone(runs), func(r *results.Run) bool { return r.ID == o.Run })
	a, err := analysis.Predict(others, w)
	switch {
	case errors.Is(err, analysis.ErrNoData):
		return "not predicted: no closed-loop sweep of it among these results", NotMeasured
	case err != nil:
		return "not predicted: " + err.Error(), NotMeasured
	}
	p := a.Asked
	if p.Overloaded {
		return "overloaded (the model's lock cannot keep up)", NotMeasured
	}
	model = fmt.Sprintf("%s / %s", ms(p.P50), ms(p.P99))
	if u := p.Sim.Utilisation; u > analysis.MaxPlanUtilisation {
		return model + fmt.Sprintf(" (%s%% utilisation)", Num(100*u)),
			fmt.Sprintf("not measured above %s%% utilisation", Num(100*analysis.MaxPlanUtilisation))
	}
	e, ok := analysis.KeptModelError(p.Mode())
	if !ok {
		return model, NotMeasured
	}
	return model, fmt.Sprintf("p50 %+.0f%% to %+.0f%%, p99 %+.0f%% to %+.0f%% (%s, %d points)", 100*e.P50[0], 100*e.P50[1], 100*e.P99[0], 100*e.P99[1], e.Mode, e.Points)
}

// glance states the findings a reader needs first: whether each variant's
// notification fan-out grows with clients, its saturation throughput,
// and safety.
func (d *Document) glance(cases []*analysis.Case, plan *analysis.Plan) {
	d.add(Heading{2, "Findings at a glance"})
	var items []string
	order, bySeries := analysis.Group(cases)
	for _, s := range order {
		if line := fanoutLine(s, bySeries[s]); line != "" {
			items = append(items, line)
		}
	}
	for _, sp := range plan.Series {
		items = append(items, fmt.Sprintf("%s, %s on %s: %s.", sp.Workload, sp.VariantLabel(), sp.Backend, sp.Saturation.Text))
	}
	for _, s := range order {
		if line := bytesLine(s, bySeries[s]); line != "" {
			items = append(items, line)
		}
	}
	var checked, violations int64
	for _, c := range cases {
		for _, r := range c.Results {
			checked += r.Safety.Checked
			violations += r.Safety.Violations
		}
	}
	items = appendMarked(items, cases, clientBound,
		"CLIENT-BOUND: %d case(s) measured the load generator, not the servers, and are left out of capacity planning: %s.")
	items = appendMarked(items, cases, loaded,
		"LOADED MACHINE: %d case(s) ran while other processes took the machine's CPUs, and are left out of capacity planning: %s.")
	if checked > 0 {
		if violations == 0 {
			items = append(items, fmt.Sprintf("Safety: %d operations checked, no violation.", checked))
		} else {
			items = append(items, fmt.Sprintf("SAFETY: %d violations in %d operations checked (see the fairness and safety tables).", violations, checked))
		}
	}
	if len(items) == 0 {
		items = append(items, "Nothing was measured.")
	}
	d.add(List{items})
}

// appendMarked appends to items, if any case is marked, the line format
// (the number of marked cases, then each as "key (detail)").
func appendMarked(items []string, cases []*analysis.Case, mark func(*analysis.Case) (string, bool), format string) []string {
	var marked []string
	for _, c := range cases {
		if detail, ok := mark(c); ok {
			marked = append(marked, fmt.Sprintf("%s (%s)", c.Key, detail))
		}
	}
	if len(marked) == 0 {
		return items
	}
	return append(items, fmt.Sprintf(format, len(marked), strings.Join(marked, "; ")))
}

// clientBound is the detail of a client-bound case.
func clientBound(c *analysis.Case) (string, bool) {
	if b := c.ClientBound(); b != nil {
		return b.Detail, true
	}
	return "", false
}

// loaded is the detail of a case that ran on a loaded machine.
func loaded(c *analysis.Case) (string, bool) {
	if x := c.Loaded(); x != nil {
		return x.Detail, true
	}
	return "", false
}

// Growth verdicts on a figure's elasticity (d log y / d log N).
const (
	growsElasticity   = 0.6
	boundedElasticity = 0.35
)

// fanoutLine says how a series' watch events per operation change with
// clients, client side and server side. The verdict uses the elasticity
// from the middle measured client count to the largest: at the smallest
// counts a lock often has no waiter at all, which would make any recipe
// look like it grows.
func fanoutLine(s analysis.Series, cases []*analysis.Case) string {
	type side struct {
		name string
		ns   []int
		ys   []float64
	}
	var sides []side
	for _, f := range []figures.Figure{figures.WatchEvents, figures.ServerWatchEvents} {
		sd := side{name: f.Side.String() + " side"}
		for _, c := range cases {
			if v, ok := c.PerOp(f.Key); ok {
				sd.ns = append(sd.ns, c.Clients)
				sd.ys = append(sd.ys, v)
			}
		}
		if len(sd.ns) >= 2 {
			sides = append(sides, sd)
		}
	}
	if len(sides) == 0 {
		return ""
	}
	elastic := math.Inf(-1)
	var parts []string
	for _, sd := range sides {
		i, j := (len(sd.ns)-1)/2, len(sd.ns)-1
		e := math.NaN()
		if sd.ys[i] > 0 && sd.ys[j] > 0 {
			e = math.Log(sd.ys[j]/sd.ys[i]) / math.Log(float64(sd.ns[j])/float64(sd.ns[i]))
			elastic = max(elastic, e)
		} else if sd.ys[j] > 0 {
			elastic = math.Inf(1)
		}
		var vals, ns []string
		for _, k := range thin(len(sd.ns), 5) {
			vals = append(vals, Num(sd.ys[k]))
			ns = append(ns, strconv.Itoa(sd.ns[k]))
		}
		part := fmt.Sprintf("%s %s at N=%s", sd.name, strings.Join(vals, " → "), strings.Join(ns, ", "))
		if !math.IsNaN(e) {
			part += fmt.Sprintf(" (≈N^%.2f from N=%d)", e, sd.ns[i])
		}
		parts = append(parts, part)
	}
	verdict := "grow slowly with clients"
	switch {
	case elastic >= growsElasticity:
		verdict = "GROW with clients (a herd)"
	case elastic <= boundedElasticity:
		verdict = "stay bounded as clients grow"
	}
	return fmt.Sprintf("%s, %s on %s: watch events per %s %s: %s.", s.Workload, s.VariantLabel(), s.Backend,
		cases[0].Unit(), verdict, strings.Join(parts, "; "))
}

// bytesLine says when a series' bytes per operation grow with clients,
// with the measured slope (the linear least-squares fit's, in bytes per
// operation per client, whichever model fits better), client side
// (payload) and server side (message bytes); "" when neither grows. The
// fit takes every measured case, client-bound ones too: what a recipe
// reads per operation does not depend on who was the limit. For a
// herd-free variant it adds that herd-free is a claim about notifications.
func bytesLine(s analysis.Series, cases []*analysis.Case) string {
	var parts []string
	for _, f := range []figures.Figure{figures.BytesReceived, figures.ServerBytesSent} {
		var ns, ys []float64
		for _, c := range cases {
			if v, ok := c.PerOp(f.Key); ok {
				ns, ys = append(ns, float64(c.Clients)), append(ys, v)
			}
		}
		fit, err := analysis.FitGrowth(ns, ys)
		if err != nil || !fit.Grows() || !fit.Linear.OK || fit.Linear.B <= 0 {
			continue
		}
		// Grows as the fan-out verdict says a figure grows: by N^0.6 or
		// more from the smallest to the largest measured N (a bounded
		// range that reads a few bytes more at 1,000 clients does not).
		i, j := 0, len(ns)-1
		if ys[i] <= 0 || ys[j] <= 0 {
			continue
		}
		e := math.Log(ys[j]/ys[i]) / math.Log(ns[j]/ns[i])
		if e < growsElasticity {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s → %s from N=%s to N=%s (≈N^%.2f), about %s bytes more per client (linear fit, R² %s; best fit %s)",
			f.Label, Num(ys[i]), Num(ys[j]), Num(ns[i]), Num(ns[j]), e,
			Num(fit.Linear.B), Num(fit.Linear.R2), fit.String()))
	}
	if len(parts) == 0 {
		return ""
	}
	line := fmt.Sprintf("%s, %s on %s: bytes per %s GROW with clients: %s.", s.Workload, s.VariantLabel(), s.Backend,
		cases[0].Unit(), strings.Join(parts, "; "))
	if s.Class == figures.HerdFree {
		line += " Herd-free is a claim about notifications, not bytes: this variant still reads a listing that grows with the waiters."
	}
	return line
}

// thin picks at most k indexes of n, first and last included.
func thin(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, k)
	for i := range out {
		out[i] = i * (n - 1) / (k - 1)
	}
	return out
}

func (d *Document) setup(runs []*results.Run) {
	d.add(Heading{2, "Setup and environment"})
	runsT := Table{Header: []string{"run", "workload", "backend", "status", "started (UTC)", "took", "cluster", "servers", "tool"}}
	for _, r := range runs {
		status := string(r.Status)
		if r.StatusDetail != "" {
			status += ": " + r.StatusDetail
		}
		var members []string
		for _, m := range r.Cluster.Members {
			s := m.Endpoint
			if m.Version != "" {
				s += " v" + m.Version
			}
			if m.Role != "" {
				s += " " + m.Role
			}
			if m.RTT > 0 {
				s += fmt.Sprintf(" (rtt %s ms)", ms(m.RTT))
			}
			members = append(members, s)
		}
		runsT.Rows = append(runsT.Rows, []string{
			r.ID, r.Config.Workload, string(r.Config.Backend), status,
			r.StartedAt.UTC().Format("2006-01-02 15:04:05"), r.FinishedAt.Sub(r.StartedAt).Round(time.Second).String(),
			r.ClusterMode, strings.Join(members, "; "), r.Tool,
		})
	}
	d.add(runsT)

	cfg := Table{Caption: "What each run was asked to do.",
		Header: []string{"run", "variants", "clients", "repeat", "duration", "ops bound", "warm-up", "load model", "hold", "think", "params"}}
	for _, r := range runs {
		c := r.Config
		model := string(c.LoadMode())
		if c.LoadMode() == results.OpenLoop {
			model += fmt.Sprintf(", %s ops/s", Num(c.Rate))
		}
		var clients []string
		for _, n := range c.Clients {
			clients = append(clients, strconv.Itoa(n))
		}
		var params []string
		for _, k := range slices.Sorted(maps.Keys(c.Params)) {
			params = append(params, k+"="+c.Params[k])
		}
		ops := NotMeasured
		if c.Ops > 0 {
			ops = strconv.FormatInt(c.Ops, 10)
		}
		cfg.Rows = append(cfg.Rows, []string{
			r.ID, strings.Join(c.Variants, ", "), strings.Join(clients, ", "), strconv.Itoa(c.Repeat),
			c.Duration.String(), ops, c.Warmup.String(), model, c.Hold.String(), c.Think.String(), strings.Join(params, " "),
		})
	}
	d.add(cfg)

	env := Table{Caption: "Where the clients ran.", Header: []string{"run", "host", "os/arch", "kernel", "CPUs", "memory", "Go", "command"}}
	for _, r := range runs {
		e := r.Environment
		mem := NotMeasured
		if e.MemTotal > 0 {
			mem = Num(float64(e.MemTotal)/(1<<30)) + " GiB"
		}
		env.Rows = append(env.Rows, []string{r.ID, e.Hostname, e.OS + "/" + e.Arch, e.Kernel, strconv.Itoa(e.CPUs), mem, e.GoVersion, strings.Join(r.Command, " ")})
	}
	d.add(env)
}

// appendValues appends to row each of figs of case c, formatted, or
// NotMeasured where c lacks it.
func appendValues(row []string, figs []figures.Figure, c *analysis.Case) ([]string, error) {
	for _, f := range figs {
		v, ok, err := c.Value(f)
		if err != nil {
			return nil, err
		}
		if !ok {
			row = append(row, NotMeasured)
			continue
		}
		row = append(row, Num(v))
	}
	return row, nil
}

// SummaryHeading is the heading of a workload's summary section.
func SummaryHeading(workload string) string { return "Summary: " + workload }

func (d *Document) summaries(cases []*analysis.Case) error {
	for _, w := range analysis.Distinct(cases, func(c *analysis.Case) string { return c.Workload }) {
		wc := slices.DeleteFunc(slices.Clone(cases), func(c *analysis.Case) bool { return c.Workload != w })
		unit := wc[0].Unit()
		d.add(Heading{2, SummaryHeading(w)})
		key := []string{"backend", "variant", "clients", "repeats"}
		keyCells := func(c *analysis.Case) []string {
			return []string{string(c.Backend), c.VariantLabel(), strconv.Itoa(c.Clients), strconv.Itoa(c.Repeats())}
		}

		// Performance: throughput and every latency histogram.
		var names []figures.Latency
		for _, c := range wc {
			for _, n := range c.LatencyNames() {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		wc[0].Results[0].SortLatencies(names)
		var figs, costFigs []figures.Figure // throughput and latency; counts per operation
		for _, f := range analysis.TableFigures(names) {
			if f.Kind == figures.PerOp {
				costFigs = append(costFigs, f)
			} else {
				figs = append(figs, f)
			}
		}
		perf := Table{
			Caption: fmt.Sprintf("Throughput in %ss per second (mean over repeats); latency percentiles in milliseconds from the histograms merged over repeats.", unit),
			Header:  append(slices.Clone(key), "ops ok"),
		}
		for _, f := range figs {
			perf.Header = append(perf.Header, f.Header(unit))
		}
		cost := Table{
			Caption: fmt.Sprintf("Cost per %s: client side from the instrumented sessions, server side from the servers' own counters.", unit),
			Header:  slices.Clone(key),
		}
		for _, f := range costFigs {
			cost.Header = append(cost.Header, f.Header(unit))
		}
		fair := Table{
			Caption: "Fairness and safety. Violations must be 0 without injected faults. Jain's index is over the clients' grants, " +
				"against a perfect round-robin of as many grants (1: as even as the grants allow), and " + NotMeasured +
				" where not every client could get a turn (fewer grants than clients, or a case shorter than clients × the mean handoff; the notes say which). " +
				"Operations still waiting at the end (queued behind the holder when the case stopped) are neither errors nor failures.",
			Header: append(slices.Clone(key), "Jain index", "FIFO inversions", "safety checked", "safety violations", "stopped by", "errors",
				"still waiting at the end"),
		}
		for _, c := range wc {
			row, err := appendValues(append(keyCells(c), strconv.FormatInt(c.Succeeded(), 10)), figs, c)
			if err != nil {
				return err
			}
			perf.Rows = append(perf.Rows, row)

			if row, err = appendValues(keyCells(c), costFigs, c); err != nil {
				return err
			}
			cost.Rows = append(cost.Rows, row)

			var inv, checked, viol, errs, waiting int64
			var stopped []string
			for _, r := range c.Results {
				inv += r.Fairness.FIFOInversions
				checked += r.Safety.Checked
				viol += r.Safety.Violations
				for kind, n := range r.Errors {
					if kind != results.ErrorKindStoppedWaiting {
						errs += n
					}
				}
				waiting += r.Ops.StillWaiting
				if !slices.Contains(stopped, string(r.StoppedBy)) {
					stopped = append(stopped, string(r.StoppedBy))
				}
			}
			fair.Rows = append(fair.Rows, append(keyCells(c),
				jainCell(c), strconv.FormatInt(inv, 10), strconv.FormatInt(checked, 10),
				strconv.FormatInt(viol, 10), strings.Join(stopped, ", "), strconv.FormatInt(errs, 10),
				strconv.FormatInt(waiting, 10)))
		}
		d.add(Heading{3, "Throughput and latency"}, perf, Heading{3, "Cost per " + string(unit)}, cost, Heading{3, "Fairness and safety"}, fair)
		if load, ok := loadTable(wc, key, keyCells); ok {
			d.add(Heading{3, "Load generator"}, load)
		}
	}
	return nil
}

// loadTable is what the load generator spent and how late it ran in each
// case (results.Load), and whether the case was client-bound; false when no
// case measured it (older files).
func loadTable(wc []*analysis.Case, key []string, keyCells func(*analysis.Case) []string) (Table, bool) {
	t := Table{
		Caption: fmt.Sprintf("The load generator (the zkbench process): CPU over its cores (mean over repeats), Go scheduler latency p99, "+
			"GC pauses, how late a 50 ms timer ran (p99), peak live heap and resident memory, keep-alives later than a tenth of their "+
			"interval and at least 100 ms (ZooKeeper: pings sent late; etcd: responses late, which includes the server), and whether the case "+
			"was client-bound, chiefly: CPU ≥ %.0f%% of its cores (or half of them, wanting %.0f%% with the wait for a CPU), or waiting for a CPU "+
			"≥ %.0f%% of them while wanting %.0f%% in all (the machine oversubscribed), scheduler latency p99 ≥ %s and ≥ %.0f%% of the case's p99 "+
			"or ≥ one operation's service p99, or %.0f%% of its keep-alives late or one a whole interval late; on a loaded machine only the CPU "+
			"rule (docs/figures.md gives every condition). A client-bound case measured zkbench, not the servers, and is left out of capacity planning.",
			100*results.MaxCPUFraction, 100*results.MaxCPUFraction, 100*results.MinStarvedShare, 100*results.MaxCPUFraction,
			results.FormatDuration(results.MaxSchedP99), 100*results.SchedShare, 100*results.MaxLateKeepAlives),
		Header: append(slices.Clone(key), "client CPU", "scheduler p99", "GC pauses (max)", "timer late p99",
			"heap peak (MiB)", "RSS peak (MiB)", "keep-alives late", "client-bound"),
	}
	measured := false
	for _, c := range wc {
		var cpu float64
		var n int
		var sched, gcMax, timer time.Duration
		var gcs, late, kas int64
		cpuMissing := false
		var heap, rss uint64
		kaKind := ""
		for _, r := range c.Results {
			l := r.Load
			if l == nil {
				continue
			}
			n++
			if l.CPUNotMeasured {
				cpuMissing = true
			}
			cpu += l.CPUFraction
			sched, timer = max(sched, l.Sched.P99), max(timer, l.TimerLateness.P99)
			gcs += l.GCPauses.Count
			gcMax = max(gcMax, l.GCPauses.Max)
			heap, rss = max(heap, l.HeapPeakBytes), max(rss, l.RSSPeakBytes)
			if k := l.KeepAlives; k != nil {
				late += k.Late
				kas += k.Lateness.Count
				kaKind = k.What
			}
		}
		row := keyCells(c)
		if n == 0 {
			row = append(row, NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured)
			t.Rows = append(t.Rows, row)
			continue
		}
		measured = true
		mib := func(b uint64) string {
			if b == 0 {
				return NotMeasured
			}
			return Num(float64(b) / (1 << 20))
		}
		kaCell := NotMeasured
		if kaKind != "" {
			kaCell = fmt.Sprintf("%d of %d (%s)", late, kas, kaKind)
		}
		bound := "no"
		if b := c.ClientBound(); b != nil {
			bound = "CLIENT-BOUND: " + b.Detail
		}
		if x := c.Loaded(); x != nil {
			bound = strings.TrimPrefix(bound+"; ", "no; ") + "LOADED MACHINE: " + x.Detail
		}
		gc := "0"
		if gcs > 0 {
			gc = fmt.Sprintf("%d (%s)", gcs, results.FormatDuration(gcMax))
		}
		cpuCell := pct(cpu / float64(n))
		if cpuMissing {
			cpuCell = NotMeasured
		}
		row = append(row, cpuCell, results.FormatDuration(sched), gc, results.FormatDuration(timer),
			mib(heap), mib(rss), kaCell, bound)
		t.Rows = append(t.Rows, row)
	}
	return t, measured
}

// jainCell is the mean Jain index over c's repeats, or NotMeasured where
// it was not measured or is not meaningful (analysis.JainUnmeaningful).
func jainCell(c *analysis.Case) string {
	j, ok := c.Jain()
	if !ok {
		return NotMeasured
	}
	return Num(j)
}

func (d *Document) plots(runs []*results.Run) error {
	figs, err := plots.Build(runs)
	if err != nil {
		return err
	}
	d.add(Heading{2, "Plots"})
	for _, f := range figs {
		d.add(Image{Name: f.Name, Title: f.Title, Caption: f.Caption, Chart: f})
	}
	return nil
}

// RenderImages draws the PNG of every image not drawn yet, on as many
// goroutines as there are cores: rasterising is most of a report's time
// (a figure takes tens of milliseconds), and figures share nothing. It
// returns the error of the first image, in the document's order, that
// failed.
func (d *Document) RenderImages() error {
	var todo []int
	for i, bl := range d.Blocks {
		if img, ok := bl.(Image); ok && img.PNG == nil {
			todo = append(todo, i)
		}
	}
	errs := make([]error, len(todo))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for k, i := range todo {
		g.Go(func() error {
			img := d.Blocks[i].(Image)
			var buf bytes.Buffer
			if errs[k] = plots.Render(&buf, img.Chart, "png"); errs[k] == nil {
				img.PNG = buf.Bytes()
				d.Blocks[i] = img
			}
			return nil // errs says which image failed, in the document's order
		})
	}
	_ = g.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *Document) capacity(plan *analysis.Plan, runs []*results.Run) {
	t := plan.Target
	d.add(Heading{2, "Capacity planning"})
	d.add(Para{Text: "A closed-loop sweep with no think time keeps every client asking, so its latency is N handoffs by " +
		"construction and answers no latency question: from such sweeps this section gives saturation throughput and " +
		"the cost of an operation there. Latency targets are answered only by open-loop runs (zkbench run --rate), closed loops " +
		"with think time (--think), or the queueing model of zkbench plan: beside each such lock run below stands the model's prediction of it from the " +
		"closed-loop sweeps (and one-client open-loop runs) among these results, with the model's measured error on the kept " +
		"validation grid (analysis/modelerror.md). Each answer names the runs behind it."})

	sat := Table{
		Caption: "Closed-loop sweeps: the highest throughput measured (neither client-bound nor on a loaded machine), and what one operation cost there " +
			"(server-side counts where the servers were scraped, else client-side).",
		Header: []string{"workload", "backend", "variant", "peak ops/s", "at clients", "requests/op", "writes/op", "reads/op", "notifications/op", "bytes/op", "runs"},
	}
	for _, sp := range plan.Series {
		st := sp.Saturation
		if st.Status != "measured" {
			sat.Rows = append(sat.Rows, []string{sp.Workload, string(sp.Backend), sp.VariantLabel(), NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured, st.Text})
			continue
		}
		row := []string{sp.Workload, string(sp.Backend), sp.VariantLabel(), Num(st.Throughput), strconv.Itoa(st.Clients)}
		for _, k := range analysis.CostKinds {
			v, ok := st.Cost[k.Kind]
			cell := NotMeasured
			if ok {
				cell = Num(v)
				if st.CostSide[k.Kind] != figures.Server.String() {
					cell += " (client)"
				}
			}
			row = append(row, cell)
		}
		sat.Rows = append(sat.Rows, append(row, strings.Join(st.Runs, ", ")))
	}
	if len(sat.Rows) > 0 {
		d.add(Heading{3, "Saturation throughput and cost per operation"}, sat)
	} else {
		d.add(Heading{3, "Saturation throughput and cost per operation"},
			Para{Text: "No closed-loop sweep without think time among these results: nothing here measured a saturation."})
	}

	usl := Table{
		Caption: "Universal Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)) fitted to each variant's closed-loop " +
			"throughput without think time (least squares on log throughput, one point per repeat, client-bound cases and cases on a " +
			"loaded machine left out); 95% intervals from the fit's covariance. σ is contention, κ coherency: a herd is crosstalk, so κ " +
			"says how herd-prone a variant is. With three client counts the fit is exact, and where the points cannot tell the " +
			"parameters apart it has no interval either (\"exact fit: none\").",
		Header: []string{"workload", "backend", "variant", "λ (ops/s)", "σ", "σ 95%", "κ", "κ 95%", "peak at N", "points", "runs"},
	}
	for _, f := range plan.USL {
		if f.Err != "" {
			usl.Rows = append(usl.Rows, []string{f.Workload, string(f.Backend), f.VariantLabel(), NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured, NotMeasured, strconv.Itoa(len(f.N)), f.Err})
			continue
		}
		u := f.USL
		sci, kci := "exact fit: none", "exact fit: none"
		if !u.Exact {
			sci = fmt.Sprintf("%s to %s", Num(u.SigmaCI[0]), Num(u.SigmaCI[1]))
			kci = fmt.Sprintf("%s to %s", Num(u.KappaCI[0]), Num(u.KappaCI[1]))
		}
		peak := "none (κ 0)"
		if p := u.Peak(); !math.IsInf(p, 1) {
			peak = Num(p)
		}
		usl.Rows = append(usl.Rows, []string{f.Workload, string(f.Backend), f.VariantLabel(), Num(u.Lambda), Num(u.Sigma), sci, Num(u.Kappa), kci, peak,
			strconv.Itoa(u.Points), strings.Join(f.Runs, ", ")})
	}
	if len(usl.Rows) > 0 {
		d.add(Heading{3, "How herd-prone: scalability fits"}, usl)
	}

	wt := Table{
		Caption: fmt.Sprintf("How many waiters one lock can have before a release takes longer than %s ms at p99: each closed-loop "+
			"case of N clients hands every release to one of N−1 waiters, so its handoff latency is a release's at N−1 waiters.", ms(t.Handoff)),
		Header: []string{"workload", "backend", "variant", "handoff p50 / p99 (ms) by waiters", "answer"},
	}
	for _, sp := range plan.Series {
		if sp.Waiters == nil || sp.Waiters.Status == "not measured" {
			continue
		}
		var pts []string
		for _, hp := range sp.Waiters.Points {
			pts = append(pts, fmt.Sprintf("%d: %s / %s", hp.Clients-1, ms(hp.P50), ms(hp.P99)))
		}
		wt.Rows = append(wt.Rows, []string{sp.Workload, string(sp.Backend), sp.VariantLabel(), strings.Join(pts, "; "), sp.Waiters.Text})
	}
	if len(wt.Rows) > 0 {
		d.add(Heading{3, "Waiters per lock"}, wt)
	}

	d.add(Heading{3, "Latency targets"})
	if len(plan.OpenLoop) == 0 {
		d.add(Para{Text: fmt.Sprintf("No open-loop or think-time run among these results: no latency target (p99 ≤ %s ms) is answered from them. "+
			"Run the workload's rate with zkbench run --rate, or predict it with zkbench plan (and check the prediction with --validate).", ms(t.P99))})
	} else {
		ol := Table{
			Caption: fmt.Sprintf("Open-loop cases (latency from each scheduled start) and closed-loop cases with think time (N workers "+
				"asking again a think time after each release; latency from each ask), against p99 ≤ %s ms.", ms(t.P99)),
			Header: []string{"workload", "backend", "variant", "clients", "loop", "hold (ms)", "achieved ops/s", "latency", "p50 (ms)", "p99 (ms)", "meets", "run"},
		}
		// The model's columns where a case is of a workload zkbench plan
		// models (a lock's queue).
		modelCols := slices.ContainsFunc(plan.OpenLoop, func(o analysis.OpenLoopCase) bool { return slices.Contains(workloads.Planned(), o.Workload) })
		if modelCols {
			ol.Caption += " For a lock, zkbench plan's prediction of the same point and the error the model was measured to have where predicted the same way."
			ol.Header = append(ol.Header, "model p50 / p99 (ms)", "model's measured error")
		}
		for _, o := range plan.OpenLoop {
			meets := map[bool]string{true: "yes", false: "no"}[o.Meets]
			p50, p99 := ms(o.P50), ms(o.P99)
			if o.NotRecorded {
				p50, p99, meets = NotMeasured, NotMeasured, "not answered: the case recorded no "+string(o.Latency)+" latency"
			} else if o.ClientBound != "" {
				meets = "client-bound: " + o.ClientBound
			} else if o.Loaded != "" {
				meets = "loaded machine: " + o.Loaded
			}
			loop := "open, " + Num(o.Rate) + " ops/s"
			if o.Rate == 0 {
				loop = "think " + ms(o.Think) + " ms"
			}
			row := []string{o.Workload, string(o.Backend), o.VariantLabel(), strconv.Itoa(o.Clients), loop, ms(o.Hold),
				Num(o.Throughput), string(o.Latency), p50, p99, meets, o.Run}
			if modelCols {
				model, merr := modelled(runs, o, t)
				row = append(row, model, merr)
			}
			ol.Rows = append(ol.Rows, row)
		}
		d.add(ol)
	}

	fits := Table{
		Caption: "Each figure fitted against clients N with a line (least squares) and a power law (least squares on " +
			"log-log data); the model with the higher R² on the raw data is kept. Constant: the fitted line moved less than " +
			"5% of the figure's mean over the measured range, and the measured values spread less than 10% of it.",
		Header: []string{"workload", "backend", "variant", "figure", "model", "fit", "R²", "points"},
	}
	for _, sp := range plan.Series {
		for _, g := range figures.Fitted() {
			f, ok := sp.Fits[g.ID()]
			if !ok {
				continue
			}
			if g.Kind == figures.Quantile {
				g = g.ForLatency(sp.Latency)
			}
			r2 := Num(f.R2)
			if f.Model == analysis.Constant {
				r2 = NotMeasured
			}
			fits.Rows = append(fits.Rows, []string{sp.Workload, string(sp.Backend), sp.VariantLabel(), g.Header(sp.Unit),
				f.Model, f.Formula(), r2, strconv.Itoa(f.Points)})
		}
	}
	if len(fits.Rows) > 0 {
		d.add(Heading{3, "How each cost grows with clients"}, fits)
	}

	dem := Table{
		Caption: "Server request rate each variant needs: operations per second (the target rate if given, else the measured " +
			"or fitted throughput) times requests per operation (server-side counts where scraped).",
		Header: []string{"workload", "backend", "variant", "clients", "ops/s", "ops/s from", "requests/op", "counted by", "requests/s", "writes/s", "share of calibrated writes", "basis"},
	}
	for _, sp := range plan.Series {
		m := sp.Demand
		if m == nil {
			continue
		}
		basis := "measured"
		if m.Extrapolated {
			basis = "EXTRAPOLATED from fits"
		} else if m.RateSource == "fit" {
			basis = "interpolated from fits"
		}
		writes, share := NotMeasured, NotMeasured
		if m.WritesPerOp > 0 {
			writes = Num(m.WritesPerSec)
		}
		if m.WriteShare > 0 {
			share = pct(m.WriteShare)
		}
		rate, reqs := Num(m.Rate), Num(m.RequestsPerSec)
		if m.RateSource == analysis.NotProjectable {
			rate, reqs, writes, share = NotMeasured, NotMeasured, NotMeasured, NotMeasured
			basis = "throughput fit falls to zero before this N: not projectable"
		}
		dem.Rows = append(dem.Rows, []string{sp.Workload, string(sp.Backend), sp.VariantLabel(), strconv.Itoa(m.Clients),
			rate, m.RateSource, Num(m.RequestsPerOp), m.RequestsSide, reqs, writes, share, basis})
	}
	if len(dem.Rows) > 0 {
		d.add(Heading{3, "Server load"}, dem)
	}

	d.add(Heading{3, "Server calibration"})
	if len(plan.Calibrations) == 0 {
		d.add(Para{Text: "Not measured: run with --calibrate to measure the cluster's raw write and read capacity, " +
			"so that this report can say how close each recipe runs to the server's limit."})
		return
	}
	cal := Table{
		Caption: "Raw capacity measured with plain session calls before the workload. Handoff bound: one write commit plus one " +
			"notification, the fastest a herd-free lock can pass from one holder to the next.",
		Header: []string{"backend", "sessions", "writes/s", "reads/s", "round trip (ms)", "write (ms)", "write + notify (ms)", "handoff bound (ms)", "max handoffs/s"},
	}
	for _, k := range sortedKinds(plan) {
		c := plan.Calibrations[backends.Kind(k)]
		maxHand := NotMeasured
		bound := c.Bound()
		if bound > 0 {
			maxHand = Num(1 / bound.Seconds())
		}
		cal.Rows = append(cal.Rows, []string{string(k), strconv.Itoa(c.Sessions), Num(c.WritesPerSec), Num(c.ReadsPerSec),
			ms(c.RTT), ms(c.WriteLatency), ms(c.NotifyLatency), ms(bound), maxHand})
	}
	d.add(cal)
	head := Table{
		Caption: "Each measured case against the calibrated capacity: server writes per second as a share of the calibrated " +
			"write rate, and (locks) throughput as a share of the herd-free handoff bound.",
		Header: []string{"workload", "backend", "variant", "clients", "throughput", "server writes/s", "share of writes", "share of handoff bound"},
	}
	for _, sp := range plan.Series {
		for _, h := range sp.Headroom {
			w, ws, hs := NotMeasured, NotMeasured, NotMeasured
			if h.ServerWritesPerSec > 0 {
				w, ws = Num(h.ServerWritesPerSec), pct(h.WriteShare)
			}
			if h.HandoffShare > 0 {
				hs = pct(h.HandoffShare)
			}
			head.Rows = append(head.Rows, []string{sp.Workload, string(sp.Backend), sp.VariantLabel(), strconv.Itoa(h.Clients), Num(h.Throughput), w, ws, hs})
		}
	}
	if len(head.Rows) > 0 {
		d.add(head)
	}
}

func sortedKinds(p *analysis.Plan) []string {
	var out []string
	for k := range p.Calibrations {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

func (d *Document) notes(runs []*results.Run, cases []*analysis.Case) {
	var items []string
	for _, r := range runs {
		if len(r.Leftovers) > 0 {
			items = append(items, fmt.Sprintf("run %s left %d node(s) behind: %s", r.ID, len(r.Leftovers), strings.Join(r.Leftovers[:min(5, len(r.Leftovers))], ", ")))
		}
		faults := 0
		for _, e := range r.Timeline {
			if e.Kind == "fault" {
				faults++
			}
		}
		if faults > 0 {
			items = append(items, fmt.Sprintf("run %s injected %d fault event(s); safety findings under faults are expected to be reported, not to be zero.", r.ID, faults))
		}
	}
	seen := map[string]bool{}
	for _, c := range cases {
		for _, r := range c.Results {
			for _, n := range analysis.Notes(r) {
				line := fmt.Sprintf("%s: %s", c.Key, n)
				if !seen[line] {
					seen[line] = true
					items = append(items, line)
				}
			}
			for _, det := range r.Safety.Details {
				items = append(items, fmt.Sprintf("%s: safety: %s", c.Key, det))
			}
		}
	}
	if len(items) == 0 {
		return
	}
	d.add(Heading{2, "Notes"}, List{items})
}
