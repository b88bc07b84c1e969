package report

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// failovers sets each failover case whose leaders crashed (--kill crash)
// beside zkbench plan's prediction of it from the failover sweeps (kill
// close) among the other runs, with the model's measured error on the
// kept validation grid.
func (d *Document) failovers(runs []*results.Run) {
	tab := Table{Header: []string{"backend", "variant", "candidates", "session timeout", "failovers", "measured p50 / p99 ms", "model p50 / p99 ms", "model's error (kept grid)", "run"}}
	for _, run := range runs {
		if run.Config.Params[workloads.ParamKill] != workloads.KillCrash {
			continue
		}
		for i := range run.Results {
			r := &run.Results[i]
			if !slices.Contains(workloads.PlannedFailover(), r.Workload) {
				continue
			}
			measured := NotMeasured
			if h := r.Latency[figures.LatencyFailover]; h != nil && h.Count > 0 {
				measured = ms(time.Duration(h.P50)) + " / " + ms(time.Duration(h.P99))
			}
			timeout, model, modelErr := modelledFailover(runs, run, r)
			tab.Rows = append(tab.Rows, []string{string(r.Backend), r.Variant, fmt.Sprint(r.Clients), timeout, fmt.Sprint(r.Ops.Succeeded),
				measured, model, modelErr, run.ID})
		}
	}
	if len(tab.Rows) == 0 {
		return
	}
	d.add(Heading{3, "Leader failover after a crash: the model beside each run"},
		Para{Text: "Each failover case whose leaders' processes died (--kill crash) beside zkbench plan --workload failover's " +
			"prediction of it: the session timeout, less the time since the server last heard the leader (up to a third of it), " +
			"plus the server's expiry check, plus the handover read off the failover sweeps with the leader's session closed " +
			"(--kill close) among the other runs of these results; with the model's measured error on the kept validation grid " +
			"(analysis/modelerror.md)."}, tab)
}

// modelledFailover is the session timeout of crash case r of run, and
// zkbench plan's prediction of it from the other runs with the model's
// kept error; or why there is none.
func modelledFailover(runs []*results.Run, run *results.Run, r *results.Result) (timeout, model, modelErr string) {
	param := "session_timeout"
	if r.Backend == backends.Etcd {
		param = "lease_ttl"
	}
	t, err := time.ParseDuration(run.Config.Params[param])
	if err != nil {
		return NotMeasured, "not predicted: the run kept no " + param, NotMeasured
	}
	ask := analysis.FailoverAsk{Workload: r.Workload, Backend: r.Backend, Variant: r.Variant, Candidates: r.Clients, Timeout: t}
	if r.Backend == backends.ZooKeeper {
		switch runner.ClusterMode(run.ClusterMode) {
		case runner.Local, runner.Docker:
			tm := zkcluster.TimingFor(t)
			ask.Tick, ask.MaxSession, ask.TickFrom = tm.Tick, tm.MaxSession, "of the ensemble zkbench started"
		default:
			return t.String(), "not predicted: the ensemble's tick is not kept (zkbench plan --tick)", NotMeasured
		}
	}
	others := slices.DeleteFunc(slices.Clone(runs), func(x *results.Run) bool { return x.ID == run.ID })
	a, err := analysis.PredictFailover(others, ask)
	switch {
	case errors.Is(err, analysis.ErrNoData):
		return t.String(), "not predicted: no failover sweep with the leader's session closed among these results", NotMeasured
	case err != nil:
		return t.String(), "not predicted: " + err.Error(), NotMeasured
	}
	p := a.Asked
	model = ms(p.P50) + " / " + ms(p.P99)
	if p.Extrapolated != "" {
		model += " (extrapolated)"
	}
	return t.String(), model, keptError(analysis.ModeFailover)
}

// keptError is the model's measured error on the kept validation grid for
// mode (analysis/modelerror.md), or NotMeasured.
func keptError(mode string) string {
	e, ok := analysis.KeptModelError(mode)
	if !ok {
		return NotMeasured
	}
	return fmt.Sprintf("p50 %+.0f%% to %+.0f%%, p99 %+.0f%% to %+.0f%% (%d points)", 100*e.P50[0], 100*e.P50[1], 100*e.P99[0], 100*e.P99[1], e.Points)
}
