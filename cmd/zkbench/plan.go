package main

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

type planFlags struct {
	workload, backend, variant string
	clients                    int
	every, think, hold         time.Duration
	target                     string
	seed                       uint64
	asJSON                     bool
	// --validate
	validate         bool
	duration, warmup time.Duration
	output, runID    string
	cluster          string
	endpoints        []string
	requireQuiet     bool
	// --against
	against string
	// --service-from
	serviceFrom string
}

func newPlanCmd() *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan RESULTS...",
		Short: "Predict a lock workload's waits and server load from kept sweeps",
		Long: `plan answers a capacity question about a lock workload — N workers, each needing
the lock every T (--every) or T after each release (--think), holding it for H
(--hold) — from kept closed-loop sweeps (results files or run folders) and, when
one of them carries one, a calibration (zkbench run --calibrate).

The lock is modelled as one FIFO server: service time = hold + a handoff drawn
from the handoff histogram of the measured case nearest in clients. A seeded
discrete-event simulation (deterministic) gives the wait distribution:
  --every T  the open loop zkbench run --rate runs: N/T acquisitions per second
             scheduled over all clients, the wait counted from the scheduled time;
  --think T  the finite-source (machine-repairman, M/G/1//N) model, zkbench run
             --think's closed loop: a waiting worker asks for nothing more, so
             the arrivals slow as the queue grows and it never passes N.
It prints the predicted wait p50 and p99 against the target, the acquisition
rate, server requests, writes, reads, notifications and bytes per second (the
basis case's counts per acquisition times that rate), each resource's capacity
in acquisitions per second (the lock: 1 / (hold + mean handoff); writes and
reads: the calibration over the counts per acquisition) with the first to
saturate and the headroom left, the most clients that meet the target, and
every variant of the same workload and backend at the same point.

Every number says where it came from: a measured case (run and case), the model
(the simulation) or a calibration (run). Client-bound cases are left out, with
their reason. Beyond the measured client counts a prediction is marked
EXTRAPOLATED, and past 2x the largest measured count it is refused.

--validate then runs the predicted point (zkbench run, open loop with --every,
closed loop with --think; --duration each) and prints predicted against measured
wait p50 and p99, acquisitions per second and server load, with the errors.`,
		Example: `  zkbench plan docs/runs/usl-zookeeper --variant fair --clients 30 --every 50ms --hold 10ms
  zkbench plan docs/runs/usl-zookeeper --variant naive --clients 50 --think 100ms --target p99=20ms
  zkbench plan docs/runs/usl-etcd --variant fair --clients 40 --every 80ms --hold 5ms --validate --cluster local
  zkbench plan lock-zookeeper lock-etcd --backend etcd --variant fair --clients 100 --every 1s --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", workloads.Planned()[0], "workload to plan ("+strings.Join(workloads.Planned(), ", ")+")")
	fl.StringVar(&f.backend, "backend", "", "backend (needed when the results hold more than one)")
	fl.StringVar(&f.variant, "variant", "", "variant to plan (naive, fair, native...); every other variant is shown beside it")
	fl.IntVar(&f.clients, "clients", 0, "workers (clients) sharing the lock")
	fl.DurationVar(&f.every, "every", 0, "each worker needs the lock once per this period (open loop)")
	fl.DurationVar(&f.think, "think", 0, "each worker asks again this long after its release (finite source)")
	fl.DurationVar(&f.hold, "hold", 0, "how long each worker holds the lock")
	fl.StringVar(&f.target, "target", "p99=50ms", "latency target: pQ=BOUND, the wait at percentile Q at most BOUND")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the simulation")
	fl.BoolVar(&f.asJSON, "json", false, "print the answer as JSON")
	fl.BoolVar(&f.validate, "validate", false, "run the predicted point and print predicted against measured")
	fl.DurationVar(&f.duration, "duration", 15*time.Second, "with --validate: measured time of the run")
	fl.DurationVar(&f.warmup, "warmup", 2*time.Second, "with --validate: unrecorded warm-up of the run")
	fl.StringVarP(&f.output, "output", "o", runner.DefaultOutput, "with --validate: folder for the run's results"+runner.OutputHelp)
	fl.StringVar(&f.runID, "run-id", "", "with --validate: run id (default: plan-<variant>-<clients>-<time>)")
	fl.StringVar(&f.cluster, "cluster", "", "with --validate: servers to start (embedded, local, docker); default: the basis run's")
	fl.StringSliceVar(&f.endpoints, "endpoints", nil, "with --validate: servers of a running cluster instead")
	fl.BoolVar(&f.requireQuiet, "require-quiet", false, requireQuietHelp)
	fl.StringVar(&f.serviceFrom, "service-from", "", "draw every acquire's service from the handoffs of this run (a results file or run folder; open loop allowed) instead of the sweep's: a run at the workload's own duty cycle")
	fl.StringVar(&f.against, "against", "", "print predicted against measured for a run already made (a results file or run folder) instead of running one")
	return cmd
}

func runPlan(cmd *cobra.Command, f *planFlags, args []string) error {
	if f.variant == "" {
		return fmt.Errorf("give --variant (the variant to plan; the others are shown beside it)")
	}
	if f.clients < 1 {
		return fmt.Errorf("give --clients, the number of workers sharing the lock")
	}
	if f.validate && f.against != "" {
		return fmt.Errorf("give --validate (run the point now) or --against (a run already made), not both")
	}
	if f.every > 0 && f.think > 0 {
		return fmt.Errorf("give --every (a period per worker) or --think (a pause after each release), not both")
	}
	if !f.validate {
		for _, name := range []string{"duration", "warmup", "output", "run-id", "cluster", "endpoints", "require-quiet"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s is read only with --validate (running the point)", name)
			}
		}
	}
	q, bound, err := analysis.ParseTarget(f.target)
	if err != nil {
		return err
	}
	runs, err := results.ReadPaths(args)
	if err != nil {
		return err
	}
	w := analysis.Workload{Workload: f.workload, Backend: backends.Kind(f.backend), Variant: f.variant, Clients: f.clients,
		Every: f.every, Think: f.think, Hold: f.hold, Percentile: q, Bound: bound, Seed: f.seed}
	if f.serviceFrom != "" {
		rs, err := results.ReadPaths([]string{f.serviceFrom})
		if err != nil {
			return err
		}
		w.ServiceFrom = rs[0]
	}
	ans, err := analysis.Predict(runs, w)
	if err != nil {
		return err
	}
	var val *analysis.Validation
	if f.validate || f.against != "" {
		var run *results.Run
		if f.validate {
			run, err = validateRun(cmd, f, ans.Asked, runs)
		} else {
			var rs []*results.Run
			rs, err = results.ReadPaths([]string{f.against})
			if err == nil {
				run = rs[0]
			}
		}
		if err != nil {
			return err
		}
		if val, err = analysis.Validate(ans.Asked, run); err != nil {
			return err
		}
	}
	return analysis.WritePlan(cmd.OutOrStdout(), ans, val, f.asJSON)
}

// validateRun runs the predicted point in this process, on the servers
// the flags name (or the kind the basis run started), and returns its
// results.
func validateRun(cmd *cobra.Command, f *planFlags, p *analysis.Prediction, runs []*results.Run) (*results.Run, error) {
	point := runner.PlanPoint{Duration: f.duration, Warmup: f.warmup, Output: f.output, RunID: f.runID,
		Mode: runner.ClusterMode(f.cluster), Endpoints: f.endpoints, RequireQuiet: f.requireQuiet}
	spec, err := point.Spec(p, runs)
	if err != nil {
		return nil, err
	}
	stderr := cmd.ErrOrStderr()
	fmt.Fprintf(stderr, "validating: %s %s at %d clients on %s (%s), run %s\n", p.Workload.Workload, p.Variant, p.Workload.Clients,
		p.Backend, cmp.Or(string(spec.Config.Servers.Mode), "remote"), spec.RunID)
	r, err := runner.NewFromSpec(spec, runner.WithProgress(stderr, runner.IsTerminal(stderr)), runner.WithCommand("zkbench "+version, os.Args))
	if err != nil {
		return nil, fmt.Errorf("--validate run: %w", err)
	}
	ctx, stop := runner.Interruptible(cmd.Context(), stderr)
	defer stop()
	run, err := r.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("--validate run: %w", err)
	}
	if err := analysis.WriteSummary(stderr, run, analysis.SummaryOptions{}); err != nil {
		return nil, err
	}
	return run, nil
}
