package docsgen

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/report"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// paperBarrier is the ZooKeeper paper's double-barrier grid of a kept
// run, as `zkbench run --preset zk-paper-barrier` prints it at its end:
// a marker's arguments are "RUN" or "RUN VARIANT".
func paperBarrier(runs, args string) (string, error) {
	f := strings.Fields(args)
	if len(f) == 0 || len(f) > 2 {
		return "", fmt.Errorf("paper-barrier: want RUN or RUN VARIANT in the marker, got %q", args)
	}
	r, err := run(runs, f[0])
	if err != nil {
		return "", err
	}
	rs := r.Results
	if len(f) == 2 {
		rs = nil
		for _, res := range r.Results {
			if res.Variant == f[1] {
				rs = append(rs, res)
			}
		}
		if len(rs) == 0 {
			return "", fmt.Errorf("paper-barrier: run %s has no case of variant %s", r.ID, f[1])
		}
	}
	var b strings.Builder
	if err := workloads.WritePaperBarrierTable(&b, rs); err != nil {
		return "", err
	}
	return "```\n" + strings.Trim(b.String(), "\n") + "\n```\n", nil
}

// uslFits is the Universal Scalability Law fitted to each variant of the
// runs the marker names (RUN[,RUN...]), as the report fits it.
func uslFits(runs, args string) (string, error) {
	var rs []*results.Run
	for _, id := range strings.Split(args, ",") {
		r, err := run(runs, strings.TrimSpace(id))
		if err != nil {
			return "", err
		}
		rs = append(rs, r)
	}
	var b strings.Builder
	b.WriteString("| backend | variant | λ (acq/s) | σ [95%] | κ [95%] | points | left out |\n")
	b.WriteString("| --- | --- | ---: | --- | --- | ---: | --- |\n")
	for _, f := range analysis.FitUSLs(rs) {
		left := "-"
		if len(f.Excluded) > 0 {
			left = strings.Join(f.Excluded, "; ")
		}
		if f.Err != "" {
			fmt.Fprintf(&b, "| %s | %s | - | - | - | %d | %s; no fit: %s |\n", f.Backend, f.Variant, len(f.N), escape(left), escape(f.Err))
			continue
		}
		u := f.USL
		ci := func(v float64, c [2]float64) string {
			if u.Exact {
				return report.Num(v) + " (exact fit)"
			}
			return fmt.Sprintf("%s [%s, %s]", report.Num(v), report.Num(c[0]), report.Num(c[1]))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s |\n", f.Backend, f.Variant, report.Num(u.Lambda),
			ci(u.Sigma, u.SigmaCI), ci(u.Kappa, u.KappaCI), u.Points, escape(left))
	}
	return b.String(), nil
}

// planCheck is the model's predictions against the kept validation runs,
// read from the files `make plan-check` writes beside them: a marker's
// arguments name them without .plan.txt, "plan-zk-fair-u20,
// plan-zk-fair-u20.service, ...". A .service file is the prediction with
// the service drawn from another open-loop run (--service-from); an .idle
// file, the uncontended acquires drawn from one-client open-loop runs at
// the workload's rate.
func planCheck(runs, args string) (string, error) {
	var b strings.Builder
	b.WriteString("| run | model utilisation | wait p50 ms | wait p99 ms | handoff mean ms | notifications/s | writes/s | requests/s | bytes/s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range strings.Split(args, ",") {
		name = strings.TrimSpace(name)
		p, mode, err := readPlanCheck(runs, name)
		if err != nil {
			return "", err
		}
		label := name
		switch mode {
		case analysis.ModeService:
			label = "… service from " + p.serviceFrom
		case analysis.ModeIdle:
			label = "… uncontended at its rate (idle runs)"
		}
		util := p.utilisation
		if p.overloaded {
			util = "overloaded"
		}
		row := []string{label, util}
		for _, fig := range []string{"wait p50 (ms)", "wait p99 (ms)", "handoff mean (ms)", "notifications/s (server)", "writes/s (server)",
			"requests/s (server)", "bytes/s (server)"} {
			v, ok := p.validation[fig]
			switch {
			case ok:
				row = append(row, v[0]+" / "+v[1])
			case p.overloaded && strings.HasPrefix(fig, "wait"):
				row = append(row, "not compared")
			default:
				row = append(row, "—")
			}
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String(), nil
}

// planConfigCheck is the config center model's predictions against the
// kept validation runs, read from the files `make plan-check` writes
// beside them; a marker's arguments name them without .plan.txt.
func planConfigCheck(runs, args string) (string, error) {
	return planModeCheck(runs, args, planCheckTable{
		marker: "plan-config-check", mode: analysis.ModeConfig, what: "a config center's plan", utilisation: true,
		header: "| run | fan-out utilisation | last watcher p50 ms | last watcher p99 ms | updates/s | notifications/s | bytes/s | server CPU s/s |\n" +
			"|---|---|---|---|---|---|---|---|\n",
		figs: []string{"last watcher p50 (ms)", "last watcher p99 (ms)", "updates/s", "notifications/s (server)", "bytes/s (server)", "server CPU s/s"},
	})
}

// planFailoverCheck is the failover model's predictions against the kept
// validation runs (the leader's process dying), read from the files `make
// plan-check` writes beside them; a marker's arguments name them without
// .plan.txt. The least and longest failovers are bounds: no error.
func planFailoverCheck(runs, args string) (string, error) {
	return planModeCheck(runs, args, planCheckTable{
		marker: "plan-failover-check", mode: analysis.ModeFailover, what: "a failover's plan",
		header: "| run | failover p50 ms | failover p99 ms | least ms (bound / measured) | longest ms (bound / measured) | notifications (server) | requests (client) |\n" +
			"|---|---|---|---|---|---|---|\n",
		figs:   []string{"failover p50 (ms)", "failover p99 (ms)", "least failover (ms)", "longest failover (ms)", "notifications (server)", "requests (client)"},
		bounds: []string{"least failover (ms)", "longest failover (ms)"},
	})
}

// planCheckTable is one way of predicting's table of its plan-check
// files: its marker, mode, header and figures, whether a utilisation
// column leads, and the figures that are bounds (printed without error).
type planCheckTable struct {
	marker, mode, what, header string
	utilisation                bool
	figs, bounds               []string
}

// planModeCheck writes t's table, a row a plan-check file, each figure
// predicted / measured (error), refusing a file made another way.
func planModeCheck(runs, args string, t planCheckTable) (string, error) {
	var b strings.Builder
	b.WriteString(t.header)
	for _, name := range strings.Split(args, ",") {
		name = strings.TrimSpace(name)
		p, mode, err := readPlanCheck(runs, name)
		if err != nil {
			return "", err
		}
		if mode != t.mode {
			return "", fmt.Errorf("%s: %s.plan.txt is not %s", t.marker, name, t.what)
		}
		row := []string{name}
		if t.utilisation {
			row = append(row, p.utilisation)
		}
		for _, fig := range t.figs {
			v, ok := p.validation[fig]
			switch {
			case !ok:
				row = append(row, "—")
			case v[2] == "" || slices.Contains(t.bounds, fig):
				row = append(row, v[0]+" / "+v[1])
			default:
				row = append(row, v[0]+" / "+v[1]+" ("+v[2]+")")
			}
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String(), nil
}

// planMode is the way of predicting a plan-check file's name says: its
// run-id alone (the sweep), .idle or .service after it.
func planMode(name string) string {
	switch {
	case strings.HasSuffix(name, ".idle"):
		return analysis.ModeIdle
	case strings.HasSuffix(name, ".service"):
		return analysis.ModeService
	}
	return analysis.ModeSweep
}

// readPlanCheck reads the plan-check file name (without .plan.txt) under
// runs and the way of predicting its name says, and refuses a file whose
// plan was not made that way.
func readPlanCheck(runs, name string) (*planText, string, error) {
	p, err := readPlanText(filepath.Join(runs, name+".plan.txt"))
	if err != nil {
		return nil, "", err
	}
	mode := planMode(name)
	switch {
	case p.config:
		mode = analysis.ModeConfig
	case p.failover:
		mode = analysis.ModeFailover
	}
	switch {
	case mode == analysis.ModeService && p.serviceFrom == "":
		return nil, "", fmt.Errorf("plan-check: %s.plan.txt names no run its service was drawn from", name)
	case mode == analysis.ModeIdle && !p.idle:
		return nil, "", fmt.Errorf("plan-check: %s.plan.txt drew no uncontended acquire from an idle run", name)
	}
	return p, mode, nil
}

// planText is what planCheck reads of one `zkbench plan --against` output.
type planText struct {
	utilisation string
	overloaded  bool
	serviceFrom string
	// idle: the uncontended acquires were drawn from one-client
	// open-loop runs at the workload's rate.
	idle bool
	// config: a config center's plan (zkbench plan --workload config);
	// failover: a leader's failover (--workload failover), which has no
	// utilisation.
	config, failover bool
	// modelError is the plan's "model error:" line.
	modelError string
	// validation: figure -> predicted, measured, and the plan's error
	// ("" when the row has none).
	validation map[string][3]string
}

var (
	columns     = regexp.MustCompile(`\s{2,}`)
	serviceFrom = regexp.MustCompile(`drawn from the handoffs of run ([^,\s]+)`)
)

func readPlanText(path string) (*planText, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plan-check: %w (make plan-check writes it)", err)
	}
	defer f.Close()
	p := &planText{validation: map[string][3]string{}}
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := serviceFrom.FindStringSubmatch(line); m != nil && p.serviceFrom == "" {
			p.serviceFrom = m[1]
		}
		if strings.HasPrefix(line, "basis: ") && strings.Contains(line, "uncontended acquires drawn at the workload's") {
			p.idle = true
		}
		switch {
		case strings.HasPrefix(line, "config center plan: "):
			p.config = true
		case strings.HasPrefix(line, "failover plan: "):
			p.failover = true
		case strings.HasPrefix(line, "model error: "):
			p.modelError = line
		case strings.HasPrefix(line, "lock utilisation "), strings.HasPrefix(line, "fan-out utilisation "):
			p.utilisation = columns.Split(strings.TrimSpace(line), -1)[1]
		case strings.HasPrefix(line, "validation against run "):
			in = true
		case in && strings.HasPrefix(line, "OVERLOADED"):
			p.overloaded = true
		case in && line == "":
			in = false
		case in:
			c := columns.Split(strings.TrimSpace(line), -1)
			if len(c) >= 3 && c[0] != "figure" {
				meas, e := c[2], ""
				if len(c) >= 4 {
					e = c[3]
				}
				if strings.HasPrefix(e, "not compared") {
					meas, e = meas+" ("+e+")", ""
				}
				p.validation[c[0]] = [3]string{c[1], meas, e}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("plan-check: %s: %w", path, err)
	}
	if (p.utilisation == "" && !p.failover) || len(p.validation) == 0 {
		return nil, fmt.Errorf("plan-check: %s has no utilisation or no validation: was it written with --against?", path)
	}
	return p, nil
}

// planError sums up the model's error on the kept validation grid, one row
// a way of predicting (the sweep alone; with the idle runs; with the
// service from another open-loop run), over the points the model put at
// or below MaxPlanUtilisation and not overloaded: each row's lowest and
// highest error of the wait p50 and p99. Its arguments name the plan-check
// files as planCheck's do. analysis embeds the table (analysis/modelerror.md)
// and prints its row with every plan.
func planError(runs, args string) (string, error) {
	type span struct {
		points   []string
		p50, p99 [2]float64
	}
	modes := map[string]*span{}
	for _, name := range strings.Split(args, ",") {
		name = strings.TrimSpace(name)
		p, mode, err := readPlanCheck(runs, name)
		if err != nil {
			return "", err
		}
		if mode != analysis.ModeFailover { // a failover has no utilisation
			util, err := strconv.ParseFloat(strings.TrimSuffix(p.utilisation, "%"), 64)
			if err != nil {
				return "", fmt.Errorf("plan-error: %s: utilisation %q: %w", name, p.utilisation, err)
			}
			if p.overloaded || util > 100*analysis.MaxPlanUtilisation {
				continue
			}
		}
		s := modes[mode]
		first := s == nil
		if first {
			s = &span{}
			modes[mode] = s
		}
		figs := map[string]*[2]float64{"wait p50 (ms)": &s.p50, "wait p99 (ms)": &s.p99}
		switch mode {
		case analysis.ModeConfig:
			figs = map[string]*[2]float64{"last watcher p50 (ms)": &s.p50, "last watcher p99 (ms)": &s.p99}
		case analysis.ModeFailover:
			figs = map[string]*[2]float64{"failover p50 (ms)": &s.p50, "failover p99 (ms)": &s.p99}
		}
		for fig, into := range figs {
			v, ok := p.validation[fig]
			if !ok || strings.Contains(v[1], "not compared") {
				return "", fmt.Errorf("plan-error: %s has no %s compared: leave it out of the grid", name, fig)
			}
			// The plan's own error, from its unrounded figures.
			pct, err := strconv.ParseFloat(strings.TrimSuffix(v[2], "%"), 64)
			if err != nil || !strings.HasSuffix(v[2], "%") {
				return "", fmt.Errorf("plan-error: %s: %s has error %q, not a percentage", name, fig, v[2])
			}
			e := pct / 100
			if first || e < into[0] {
				into[0] = e
			}
			if first || e > into[1] {
				into[1] = e
			}
		}
		s.points = append(s.points, strings.TrimSuffix(strings.TrimSuffix(name, ".idle"), ".service"))
	}
	var b strings.Builder
	b.WriteString("| mode | points | p50 error | p99 error | runs |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, mode := range []string{analysis.ModeSweep, analysis.ModeIdle, analysis.ModeService, analysis.ModeConfig, analysis.ModeFailover} {
		s := modes[mode]
		if s == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %+.0f%% to %+.0f%% | %+.0f%% to %+.0f%% | %s |\n", mode, len(s.points),
			100*s.p50[0], 100*s.p50[1], 100*s.p99[0], 100*s.p99[1], strings.Join(s.points, ", "))
	}
	return b.String(), nil
}
