package runner

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
)

// PlanPoint is how `zkbench plan --validate` runs a predicted point: for
// Duration after an unrecorded Warmup, on Endpoints, else servers of
// Mode, else of the kind the prediction's basis run started.
type PlanPoint struct {
	Duration, Warmup time.Duration
	Output, RunID    string // RunID "": plan-<variant>-<clients>-<time>
	Mode             ClusterMode
	Endpoints        []string
	RequireQuiet     bool
}

// ConfigSpec is the run of a config center plan's point: its variant alone
// at its watchers, size and rate, the basis's poll interval, on the
// basis's kind of servers unless the flags name others.
func (pp PlanPoint) ConfigSpec(p *analysis.ConfigPrediction) (Spec, error) {
	id := pp.RunID
	if id == "" {
		id = fmt.Sprintf("plan-%s-%s-%d-%s", p.Ask.Workload, p.Ask.Variant, p.Ask.Watchers, time.Now().UTC().Format("20060102-150405"))
	}
	params := map[string]string{"size": strconv.Itoa(p.Ask.Size)}
	if p.Poll != "" {
		params["poll"] = p.Poll
	}
	if p.Servers.StepTimeout != "" {
		params["step_timeout"] = p.Servers.StepTimeout
	}
	spec := Spec{Config: Config{
		Backend: p.Backend, Workload: p.Ask.Workload, Variants: []string{p.Ask.Variant}, Clients: []int{p.Ask.Watchers},
		Repeat: 1, Duration: pp.Duration, Warmup: pp.Warmup, Rate: p.Ask.Rate, Params: params,
		Servers: Servers{Nodes: 1, SessionTimeout: Auto, LeaseTTL: Auto, PreflightTimeout: 10 * time.Second},
	}, RunID: id, Output: pp.Output, RequireQuiet: pp.RequireQuiet}
	// The basis's nodes (when zkbench starts the servers) and shared
	// connections: a grid made on three nodes or over shared connections
	// is validated alike.
	var err error
	if n := p.Servers.Nodes; n != "" && len(pp.Endpoints) == 0 {
		if spec.Config.Servers.Nodes, err = strconv.Atoi(n); err != nil {
			return Spec{}, fmt.Errorf("--validate: the basis run %s has nodes %q", p.Basis[0].Run, n)
		}
	}
	if c := p.Servers.Conns; c != "" {
		if spec.Config.Servers.Conns, err = strconv.Atoi(c); err != nil {
			return Spec{}, fmt.Errorf("--validate: the basis run %s has conns %q", p.Basis[0].Run, c)
		}
	}
	return spec, pp.servers(&spec.Config.Servers, p.Mode, p.Basis[0].Run)
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
	id := pp.RunID
	if id == "" {
		id = fmt.Sprintf("plan-%s-%d-%s", p.Variant, p.Workload.Clients, time.Now().UTC().Format("20060102-150405"))
	}
	spec := Spec{Config: Config{
		Backend: p.Backend, Workload: p.Workload.Workload, Variants: []string{p.Variant}, Clients: []int{p.Workload.Clients},
		Repeat: 1, Duration: pp.Duration, Warmup: pp.Warmup, Hold: p.Workload.Hold,
		Servers: Servers{Nodes: 1, SessionTimeout: Auto, LeaseTTL: Auto, PreflightTimeout: 10 * time.Second},
	}, RunID: id, Output: pp.Output, RequireQuiet: pp.RequireQuiet}
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
