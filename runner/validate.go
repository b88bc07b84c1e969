package runner

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// PlanPoint is how `zkbench plan --validate` runs a predicted point: for
// Duration after an unrecorded Warmup, on Endpoints, else servers of
// Mode, else of the kind the prediction's basis run started.
type PlanPoint struct {
	Duration, Warmup time.Duration
	Output, RunID    string // RunID "": plan-<variant>-<clients>-<time> (a config center: plan-config-<variant>-<watchers>-<time>; a failover: plan-failover-<variant>-<candidates>-<time>)
	Mode             ClusterMode
	Endpoints        []string
	RequireQuiet     bool
	// Failovers are the leader crashes of a failover point.
	Failovers int
}

// FailoverSpec is the run of a failover plan's point: its variant alone at
// its candidates, the leader's process dying (kill crash) Failovers times
// (at most candidates−1), sessions of the plan's timeout, with the basis's
// nodes and connections, on the basis's kind of servers unless the flags
// name others. The run's duration and each failover's step timeout only
// bound it.
func (pp PlanPoint) FailoverSpec(p *analysis.FailoverPrediction) (Spec, error) {
	k := min(pp.Failovers, p.Ask.Candidates-1)
	// A failover waits up to 2T/3 for the crash, then up to the model's
	// longest failover; the step allows 2T for the two and a minute more.
	step := (2*p.Timeout + p.Most + time.Minute).Truncate(time.Second)
	spec := pp.point(fmt.Sprintf("%s-%s-%d", p.Ask.Workload, p.Ask.Variant, p.Ask.Candidates), Config{
		Backend: p.Backend, Workload: p.Ask.Workload, Variants: []string{p.Ask.Variant}, Clients: []int{p.Ask.Candidates},
		Ops: int64(k), Params: map[string]string{workloads.ParamKill: workloads.KillCrash, workloads.ParamStepTimeout: step.String()},
	})
	spec.Config.Duration = time.Duration(k) * step
	spec.Config.Warmup = 0 // the workload has none: its first election is not measured
	if p.Backend == backends.Etcd {
		spec.Config.Servers.LeaseTTL = p.Timeout
	} else {
		spec.Config.Servers.SessionTimeout = p.Timeout
	}
	if err := pp.basisServers(&spec, p.Basis[0].Servers, p.Basis[0].Run); err != nil {
		return Spec{}, err
	}
	return spec, pp.servers(&spec.Config.Servers, p.Basis[0].Mode, p.Basis[0].Run)
}

// basisServers gives spec the basis run's nodes (when zkbench starts the
// servers) and shared connections: a basis made on three nodes or over
// shared connections is validated alike.
func (pp PlanPoint) basisServers(spec *Spec, s analysis.ConfigServers, basis string) error {
	var err error
	if n := s.Nodes; n != "" && len(pp.Endpoints) == 0 {
		if spec.Config.Servers.Nodes, err = strconv.Atoi(n); err != nil {
			return fmt.Errorf("--validate: the basis run %s has nodes %q", basis, n)
		}
	}
	if c := s.Conns; c != "" {
		if spec.Config.Servers.Conns, err = strconv.Atoi(c); err != nil {
			return fmt.Errorf("--validate: the basis run %s has conns %q", basis, c)
		}
	}
	return nil
}

// ConfigSpec is the run of a config center plan's point: its variant alone
// at its watchers, size and rate, the basis's poll interval, on the
// basis's kind of servers unless the flags name others.
func (pp PlanPoint) ConfigSpec(p *analysis.ConfigPrediction) (Spec, error) {
	params := map[string]string{"size": strconv.Itoa(p.Ask.Size)}
	if p.Poll != "" {
		params["poll"] = p.Poll
	}
	if p.Servers.StepTimeout != "" {
		params["step_timeout"] = p.Servers.StepTimeout
	}
	spec := pp.point(fmt.Sprintf("%s-%s-%d", p.Ask.Workload, p.Ask.Variant, p.Ask.Watchers), Config{
		Backend: p.Backend, Workload: p.Ask.Workload, Variants: []string{p.Ask.Variant}, Clients: []int{p.Ask.Watchers},
		Rate: p.Ask.Rate, Params: params,
	})
	if err := pp.basisServers(&spec, p.Servers, p.Basis[0].Run); err != nil {
		return Spec{}, err
	}
	return spec, pp.servers(&spec.Config.Servers, p.Mode, p.Basis[0].Run)
}

// point is the validation run of cfg (its workload, variant, clients and
// load) with the flags' bounds and output, once, on one node of the
// servers' defaults; its run ID, when the flags give none, is
// plan-<name>-<time>.
func (pp PlanPoint) point(name string, cfg Config) Spec {
	id := pp.RunID
	if id == "" {
		id = fmt.Sprintf("plan-%s-%s", name, time.Now().UTC().Format("20060102-150405"))
	}
	cfg.Repeat, cfg.Duration, cfg.Warmup = 1, pp.Duration, pp.Warmup
	cfg.Servers = Servers{Nodes: 1, SessionTimeout: Auto, LeaseTTL: Auto, PreflightTimeout: 10 * time.Second}
	return Spec{Config: cfg, RunID: id, Output: pp.Output, RequireQuiet: pp.RequireQuiet}
}

// servers sets srv from the flags, or to the basis run's kind of servers
// (mode).
func (pp PlanPoint) servers(srv *Servers, mode, basis string) error {
	switch {
	case len(pp.Endpoints) > 0:
		srv.Endpoints = pp.Endpoints
	case pp.Mode != "":
		srv.Mode = pp.Mode
	default:
		switch m := ClusterMode(mode); m {
		case Embedded, Local, Docker:
			srv.Mode = m
		default:
			return fmt.Errorf("--validate: the basis run %s ran on a %q cluster zkbench cannot start again: give --endpoints or --cluster", basis, mode)
		}
	}
	return nil
}

// Spec is the run of p's point, the prediction's variant alone at its
// client count: open loop at its rate when it has a period, closed loop
// with its think time when not. basis are the runs p was predicted from.
func (pp PlanPoint) Spec(p *analysis.Prediction, basis []*results.Run) (Spec, error) {
	spec := pp.point(fmt.Sprintf("%s-%d", p.Variant, p.Workload.Clients), Config{
		Backend: p.Backend, Workload: p.Workload.Workload, Variants: []string{p.Variant}, Clients: []int{p.Workload.Clients},
		Hold: p.Workload.Hold,
	})
	if p.Workload.Every > 0 {
		spec.Config.Rate = p.Workload.Rate()
	} else {
		spec.Config.Think = p.Workload.Think
	}
	mode := ""
	for _, r := range basis {
		if r.ID == p.Basis.Run {
			mode = r.ClusterMode
		}
	}
	if err := pp.servers(&spec.Config.Servers, mode, p.Basis.Run); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// RunPoint makes spec, a plan's predicted point (what), in this process,
// as `zkbench plan --validate` does: it says so on stderr, shows the run's
// progress there, stops it cleanly on Ctrl-C, and writes its summary there.
// opts are the run's options beyond its progress (its command line).
func RunPoint(ctx context.Context, spec Spec, what string, stderr io.Writer, opts ...Option) (*results.Run, error) {
	fmt.Fprintf(stderr, "validating: %s (%s), run %s\n", what, cmp.Or(string(spec.Config.Servers.Mode), "remote"), spec.RunID)
	r, err := NewFromSpec(spec, append(opts, WithProgress(stderr, IsTerminal(stderr)))...)
	if err != nil {
		return nil, fmt.Errorf("--validate run: %w", err)
	}
	ctx, stop := Interruptible(ctx, stderr)
	defer stop()
	run, err := r.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("--validate run: %w", err)
	}
	return run, analysis.WriteSummary(stderr, run, analysis.SummaryOptions{})
}
