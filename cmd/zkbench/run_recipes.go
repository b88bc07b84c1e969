package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// presetMinDuration bounds each cell of a preset instead of --duration's
// per-case default: a cell runs its barriers to the end.
const presetMinDuration = 30 * time.Minute

// recipeFlags are the flags of the election and barrier workloads; each
// becomes a workload parameter (results.Config.Params) of the workloads
// that read it.
type recipeFlags struct {
	failovers   int
	kill        string
	settle      time.Duration
	candidates  int
	stepTimeout time.Duration
	work        time.Duration
	jitter      time.Duration
	rounds      int
	preset      string
	scale       float64
	fence       string
}

func addRecipeFlags(fl *pflag.FlagSet, f *recipeFlags) {
	fl.IntVar(&f.failovers, "failovers", 10, "failover, observers: leader kills per case when --ops is 0")
	fl.StringVar(&f.kill, "kill", workloads.KillClose, "failover, observers: how the leader's session ends: close (by its client), or expire (on the server: etcd revokes the lease, ZooKeeper closes the session from a second connection)")
	fl.DurationVar(&f.settle, "settle", 100*time.Millisecond, "failover, observers: quiet time before each kill, so every waiter is asleep")
	fl.IntVar(&f.candidates, "candidates", 3, "observers: candidates besides the observers (at least failovers+1)")
	fl.DurationVar(&f.stepTimeout, "step-timeout", time.Minute, "failover, observers: bound on one failover")
	fl.DurationVar(&f.work, "work", 0, "barrier: computation between Enter and Leave")
	fl.DurationVar(&f.jitter, "jitter", 0, "barrier: spread arrivals and computations by a random [0, jitter)")
	fl.IntVar(&f.rounds, "rounds", 20, "barrier: rounds per case when --ops is 0")
	fl.StringVar(&f.preset, "preset", "", "barrier: "+workloads.PresetPaperBarrier+
		" runs the ZooKeeper paper's double barrier grid (50, 100, 200 clients x 200 to 1,600 barriers, times --scale) and prints its table")
	fl.Float64Var(&f.scale, "scale", 0.1, "--preset: fraction of the paper's sizes, 0 < scale <= 1")
	fl.StringVar(&f.fence, "fence", workloads.FenceOff, "lock: holders write to a shared register with their fencing token after each grant and before each release; "+
		"off: it accepts stale writes (a holder's whose lock passed on) and counts them as violations; on: it rejects them (counted as prevented)")
}

// apply records the parameters of p's workload and expands a preset.
func (f *recipeFlags) apply(p *plan) error {
	params := p.cfg.Params
	switch f.fence {
	case workloads.FenceOff, workloads.FenceOn:
	default:
		return fmt.Errorf("--fence %q: want %s or %s", f.fence, workloads.FenceOff, workloads.FenceOn)
	}
	if f.fence != workloads.FenceOff && p.workload.Name() != "lock" {
		return fmt.Errorf("--fence %s: only the lock workload writes to a fenced register", f.fence)
	}
	switch p.workload.Name() {
	case "lock":
		params[workloads.ParamFence] = f.fence
	case "failover", "observers":
		params[workloads.ParamFailovers] = strconv.Itoa(f.failovers)
		params[workloads.ParamKill] = f.kill
		params[workloads.ParamSettle] = f.settle.String()
		params[workloads.ParamStepTimeout] = f.stepTimeout.String()
		if p.workload.Name() == "observers" {
			params[workloads.ParamCandidates] = strconv.Itoa(f.candidates)
		}
	case "barrier":
		params[workloads.ParamWork] = f.work.String()
		params[workloads.ParamJitter] = f.jitter.String()
		params[workloads.ParamRounds] = strconv.Itoa(f.rounds)
	}
	if f.preset == "" {
		return nil
	}
	if f.preset != workloads.PresetPaperBarrier {
		return fmt.Errorf("--preset %q: the only preset is %s", f.preset, workloads.PresetPaperBarrier)
	}
	if p.workload.Name() != "barrier" {
		return fmt.Errorf("--preset %s runs the barrier workload: add --workload barrier", f.preset)
	}
	grid, err := workloads.PaperBarrierGrid(f.scale)
	if err != nil {
		return fmt.Errorf("--scale: %w", err)
	}
	p.preset = grid
	p.clients = nil
	for _, c := range grid {
		if !contains(p.clients, c.Clients) {
			p.clients = append(p.clients, c.Clients)
		}
	}
	p.cfg.Clients = p.clients
	p.cfg.Duration = max(p.cfg.Duration, presetMinDuration)
	params["preset"] = f.preset
	params["scale"] = strconv.FormatFloat(f.scale, 'g', -1, 64)
	maxN := 0
	for _, n := range p.clients {
		maxN = max(maxN, n)
	}
	return checkOpenFiles(maxN, p.kind, p.mode, 0)
}

// presetSweep runs a preset's grid: every cell (clients, barriers) for every
// variant and repeat, each a barrier case whose --ops is the cell's
// barriers. It writes the results file after each case, as sweep does.
func (r *runner) presetSweep(ctx context.Context, b backends.Backend, info backends.ClusterInfo) error {
	p := r.plan
	total := len(p.preset) * len(p.variants) * p.cfg.Repeat
	i := 0
	for _, cell := range p.preset {
		for _, v := range p.variants {
			for rep := 1; rep <= p.cfg.Repeat; rep++ {
				if ctx.Err() != nil {
					return nil
				}
				i++
				cfg := p.cfg
				cfg.Ops = int64(cell.Barriers)
				caseID := fmt.Sprintf("%s-%dc-%db-%d", v, cell.Clients, cell.Barriers, rep)
				r.progress("[%d/%d] %s %s, %d clients, %d barriers, repeat %d/%d",
					i, total, cfg.Workload, v, cell.Clients, cell.Barriers, rep, cfg.Repeat)
				if err := r.presetCase(ctx, b, info, caseID, workloads.Case{
					Backend: b, Cluster: info, Variant: v, Clients: cell.Clients, Repeat: rep,
					Namespace: backends.Namespace(p.runID) + "/" + caseID, Config: cfg, Log: r.log,
					ServerPIDs: r.serverPIDs,
				}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// presetCase runs one case and records it as sweep records its cases.
func (r *runner) presetCase(ctx context.Context, b backends.Backend, info backends.ClusterInfo, caseID string, c workloads.Case) error {
	r.log.Event("case", "start "+caseID, results.NoClient)
	res, err := r.plan.workload.Run(ctx, c)
	if cerr := r.removeNamespace(b, c.Namespace); cerr != nil {
		res.Notes = append(res.Notes, cerr.Error())
		r.progress("  %v", cerr)
	}
	r.log.Event("case", "end "+caseID, results.NoClient)
	if err != nil {
		r.progress("  failed: %v", err)
		if res.Ops.Issued > 0 {
			r.res.Results = append(r.res.Results, res)
		}
		return fmt.Errorf("case %s: %w", caseID, err)
	}
	r.res.Results = append(r.res.Results, res)
	r.progress("  %s", caseLine(&res))
	r.res.Leftovers = r.log.LeftoverPaths()
	r.res.Timeline = r.log.Timeline()
	return results.WriteFile(r.path, r.res)
}

// presetTable prints the preset's own table after the summary.
func (r *runner) presetTable() {
	if len(r.plan.preset) == 0 {
		return
	}
	if err := workloads.WritePaperBarrierTable(r.stdout, r.res.Results); err != nil {
		r.progress("zkbench: preset table: %v", err)
	}
}
