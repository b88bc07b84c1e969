package report

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// watchers adds, for config workload runs, how many watchers of a config
// of each measured size the cluster updates within the target (every
// client has an update within target at the 99th percentile), and what
// each measured point cost.
func (d *Document) watchers(runs []*results.Run, t analysis.Target) {
	wcs := analysis.WatcherCapacities(runs, t.P99)
	if len(wcs) == 0 {
		return
	}
	d.add(Heading{3, "Watchers of a config updated within the target"})
	d.add(Para{Text: fmt.Sprintf("How many watchers of a config of a given size the cluster brings to each update, "+
		"the last of them within p99 ≤ %s ms (from the start of the write until the last client has that version or a "+
		"newer one: histogram propagate_last_start; files from before it was kept count from the write's reply). "+
		"The answer is a measured count: the last that met the target before the first measured one that missed it, and that one; "+
		"nothing is interpolated between them. Client-bound cases and cases on a loaded machine are left out.", ms(wcs[0].Target))})
	tab := Table{Header: []string{"backend", "variant", "size", "updates/s", "watchers within target", "measured: clients → last p99 ms", "model: most within target", "model's error (kept grid)"}}
	for _, wc := range wcs {
		var pts []string
		for _, p := range wc.Points {
			pts = append(pts, fmt.Sprintf("%d → %s%s", p.Clients, ms(p.LastP99), pointFlag(p)))
		}
		model, modelErr := modelledWatchers(runs, wc)
		tab.Rows = append(tab.Rows, []string{string(wc.Backend), wc.Variant, figures.FormatSize(wc.Size), rateText(wc.Rate), wc.Text(), strings.Join(pts, "; "), model, modelErr})
	}
	d.add(tab)
	d.add(Para{Text: "Beside each measured answer, zkbench plan --workload config's answer from the same cases: the most watchers " +
		"whose last p99 the model puts within the target, read between the measured counts on log-log axes (no further than " +
		"twice the largest), with the model's measured error on the kept validation grid (analysis/modelerror.md), which holds " +
		"up to 80% fan-out utilisation."})
	d.add(Para{Text: "Each measured point, per update: each client's propagation (p50, p99, p99.9 from the write's start), " +
		"until the last client (p99), notifications and bytes client | server side, the servers' CPU, the servers' live " +
		"heap per watching client (after a forced collection, before the interval; ± the heap reading's own noise a " +
		"watcher, the difference of two readings before the clients armed, where the run kept it; — where it cannot be read: the " +
		"embedded etcd, containers), the clients that skipped the version, and sessions lost."})
	pt := Table{Header: []string{"backend", "variant", "size", "updates/s", "clients", "p50 ms", "p99 ms", "p99.9 ms", "last p99 ms",
		"notifications cli | srv", "bytes cli | srv", "server CPU ms", "heap/watcher B", "skipped", "lost"}}
	for _, wc := range wcs {
		for _, p := range wc.Points {
			pt.Rows = append(pt.Rows, []string{string(wc.Backend), wc.Variant, figures.FormatSize(wc.Size), rateText(wc.Rate), fmt.Sprint(p.Clients) + pointFlag(p),
				ms(p.P50), ms(p.P99), ms(p.P999), ms(p.LastP99),
				Num(p.Notifications) + " | " + Num(p.ServerNotifications), Num(p.BytesPerUpdate) + " | " + Num(p.ServerBytesPerUpdate),
				orDash(p.ServerCPUPerUpdate * 1000), heapText(p.HeapPerWatcher, p.HeapPerWatcherNoise), Num(p.Skipped), fmt.Sprint(p.SessionsLost)})
		}
	}
	d.add(pt)
}

// pointFlag marks a point left out of the answer.
func pointFlag(p analysis.WatcherPoint) string {
	switch {
	case strings.HasPrefix(p.ClientBound, "loaded machine"):
		return " (loaded machine)"
	case p.ClientBound != "":
		return " (client-bound)"
	}
	return ""
}

// heapText is the servers' heap per watcher, with what the reading can
// resolve (the heap's own noise per watcher) where it was read.
func heapText(v float64, noise *float64) string {
	switch {
	case v == 0:
		return NotMeasured
	case noise == nil:
		return Num(v)
	}
	return Num(v) + " ± " + Num(*noise)
}

// orDash is v, or NotMeasured for a figure not measured (0).
func orDash(v float64) string {
	if v == 0 {
		return NotMeasured
	}
	return Num(v)
}

// modelledWatchers is zkbench plan's answer to wc's question and the
// model's kept error there; or why there is none.
func modelledWatchers(runs []*results.Run, wc analysis.WatcherCapacity) (model, modelErr string) {
	if !slices.ContainsFunc(wc.Points, func(p analysis.WatcherPoint) bool { return p.Notifications > 0 || p.ServerNotifications > 0 }) {
		return "not predicted: it polls (the plan models a watch's fan-out)", NotMeasured
	}
	p, util, err := wc.Modelled(runs)
	switch {
	case errors.Is(err, analysis.ErrNoData):
		return "not predicted: no case here the plan reads (propagation from the write's start kept, neither client-bound nor on a loaded machine)", NotMeasured
	case err != nil:
		return "not predicted: " + err.Error(), NotMeasured
	}
	model = p.AnswerText()
	if p.Extrapolated != "" {
		model += " (extrapolated)"
	}
	return model, configError(util)
}

// configError is the config model's kept error at a fan-out utilisation.
func configError(util float64) string {
	if util > analysis.MaxPlanUtilisation {
		return fmt.Sprintf("not measured above %.0f%% fan-out utilisation (here %.0f%%)", 100*analysis.MaxPlanUtilisation, 100*util)
	}
	return keptError(analysis.ModeConfig)
}

// rateText is a config run's --rate, or the workload's default.
func rateText(rate float64) string {
	if rate <= 0 {
		return "default"
	}
	return Num(rate)
}

// configChecks sets each config case the plan can read beside the
// model's prediction of it from the other cases.
func (d *Document) configChecks(runs []*results.Run) {
	checks, err := analysis.CheckConfigCases(runs)
	if err != nil {
		d.add(Para{Text: "The config cases could not be set beside the model: " + err.Error()})
		return
	}
	if len(checks) == 0 {
		return
	}
	tab := Table{Header: []string{"backend", "variant", "size", "updates/s", "watchers", "measured last p50 / p99 ms", "model p50 / p99 ms", "model's fan-out utilisation", "model's error (kept grid)", "run"}}
	ends := 0
	for _, c := range checks {
		if errors.Is(c.Err, analysis.ErrBeyondBasis) {
			ends++
			continue
		}
		model, util, modelErr := "", NotMeasured, NotMeasured
		switch {
		case errors.Is(c.Err, analysis.ErrNoData):
			model = "not predicted: no other case here the plan reads"
		case c.Err != nil:
			model = "not predicted: " + c.Err.Error()
		}
		if p := c.Predicted; p != nil {
			model = ms(p.LastP50) + " / " + ms(p.LastP99)
			if p.Extrapolated != "" {
				model += " (extrapolated)"
			}
			util, modelErr = pct(p.Utilisation), configError(p.Utilisation)
		}
		tab.Rows = append(tab.Rows, []string{string(c.Backend), c.Variant, figures.FormatSize(c.Size), rateText(c.Rate), fmt.Sprint(c.Watchers),
			ms(c.Measured.LastP50) + " / " + ms(c.Measured.LastP99), model, util, modelErr, c.Run})
	}
	d.add(Heading{3, "A config center's propagation: the model beside each case"},
		Para{Text: "Each config case zkbench plan --workload config can read (a watching variant, made at a --rate, neither " +
			"client-bound nor on a loaded machine) beside the plan's prediction of its propagation to the last watcher, from the write's " +
			"start, made from every other case of these results (the case itself left out, so the figure is read off its neighbours: " +
			"between watcher counts on log-log axes, between sizes linearly, between rates on log-log axes); with the model's measured " +
			"error on the kept validation grid (analysis/modelerror.md)."})
	if ends > 0 {
		d.add(Para{Text: fmt.Sprintf("%d case(s) at the ends of their sweeps are not shown: with the case left out, the model would have to read "+
			"further than %vx beyond the counts, sizes or rates measured, which it does not.", ends, analysis.MaxExtrapolation)})
	}
	if len(tab.Rows) > 0 {
		d.add(tab)
	}
}
