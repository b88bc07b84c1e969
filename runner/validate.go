package runner

import (
	"fmt"
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
	srv := &spec.Config.Servers
	switch {
	case len(pp.Endpoints) > 0:
		srv.Endpoints = pp.Endpoints
	case pp.Mode != "":
		srv.Mode = pp.Mode
	default:
		mode := ""
		for _, r := range basis {
			if r.ID == p.Basis.Run {
				mode = r.ClusterMode
			}
		}
		switch m := ClusterMode(mode); m {
		case Embedded, Local, Docker:
			srv.Mode = m
		default:
			return Spec{}, fmt.Errorf("--validate: the basis run %s ran on a %q cluster zkbench cannot start again: give --endpoints or --cluster", p.Basis.Run, mode)
		}
	}
	return spec, nil
}
