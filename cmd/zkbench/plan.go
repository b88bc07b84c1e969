package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runflags"
	"github.com/zkbench/zkbench/runner"
)

func newPlanCmd() *cobra.Command {
	var f *runflags.Plan
	cmd := &cobra.Command{
		Use:   "plan RESULTS...",
		Short: "Predict a lock's waits, a config center's propagation or a leader's failover, and the server load, from kept sweeps",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(cmd, f, args)
		},
	}
	f = runflags.BindPlan(cmd.Flags())
	return cmd
}

func runPlan(cmd *cobra.Command, f *runflags.Plan, args []string) error {
	switch {
	case f.FanOut():
		return runFanOutPlan(cmd, f, args)
	case f.Failover():
		return runFailoverPlan(cmd, f, args)
	}
	w, err := f.Asked(cmd.Flags())
	if err != nil {
		return err
	}
	runs, err := results.ReadPaths(args)
	if err != nil {
		return err
	}
	ans, err := analysis.Predict(runs, w)
	if err != nil {
		return err
	}
	var val *analysis.Validation
	if f.Validate || f.Against != "" {
		p := ans.Asked
		run, err := pointRun(cmd, f, func(pp runner.PlanPoint) (runner.Spec, error) { return pp.Spec(p, runs) },
			fmt.Sprintf("%s %s at %d clients on %s", p.Workload.Workload, p.Variant, p.Workload.Clients, p.Backend))
		if err != nil {
			return err
		}
		if val, err = analysis.Validate(p, run); err != nil {
			return err
		}
	}
	return analysis.WritePlan(cmd.OutOrStdout(), ans, val, f.JSON)
}

// runFanOutPlan is plan for a config center.
func runFanOutPlan(cmd *cobra.Command, f *runflags.Plan, args []string) error {
	ask, err := f.AskedFanOut(cmd.Flags())
	if err != nil {
		return err
	}
	runs, err := results.ReadPaths(args)
	if err != nil {
		return err
	}
	ans, err := analysis.PredictConfig(runs, ask)
	if err != nil {
		return err
	}
	var val *analysis.Validation
	if f.Validate || f.Against != "" {
		run, err := pointRun(cmd, f, func(pp runner.PlanPoint) (runner.Spec, error) { return pp.ConfigSpec(ans.Asked) },
			fmt.Sprintf("%s %s at %d watchers, %d bytes, %v updates/s on %s", ask.Workload, ask.Variant, ask.Watchers, ask.Size, ask.Rate, ans.Asked.Backend))
		if err != nil {
			return err
		}
		if val, err = analysis.ValidateConfig(ans.Asked, run); err != nil {
			return err
		}
	}
	return analysis.WriteConfigPlan(cmd.OutOrStdout(), ans, val, f.JSON)
}

// runFailoverPlan is plan for a leader's failover.
func runFailoverPlan(cmd *cobra.Command, f *runflags.Plan, args []string) error {
	ask, err := f.AskedFailover(cmd.Flags())
	if err != nil {
		return err
	}
	runs, err := results.ReadPaths(args)
	if err != nil {
		return err
	}
	ans, err := analysis.PredictFailover(runs, ask)
	if err != nil {
		return err
	}
	var val *analysis.Validation
	if f.Validate || f.Against != "" {
		p := ans.Asked
		run, err := pointRun(cmd, f, func(pp runner.PlanPoint) (runner.Spec, error) { return pp.FailoverSpec(p) },
			fmt.Sprintf("%s %s at %d candidates, sessions of %v, the leader crashing on %s", ask.Workload, ask.Variant, ask.Candidates, p.Timeout, p.Backend))
		if err != nil {
			return err
		}
		if val, err = analysis.ValidateFailover(p, run); err != nil {
			return err
		}
	}
	return analysis.WriteFailoverPlan(cmd.OutOrStdout(), ans, val, f.JSON)
}

// pointRun is the run a plan is validated against: --against's, or with
// --validate the spec's run of the predicted point (what) made in this
// process, on the servers the flags name or the kind the basis run started.
func pointRun(cmd *cobra.Command, f *runflags.Plan, spec func(runner.PlanPoint) (runner.Spec, error), what string) (*results.Run, error) {
	if !f.Validate {
		rs, err := results.ReadPaths([]string{f.Against})
		if err != nil {
			return nil, err
		}
		return rs[0], nil
	}
	sp, err := spec(f.Point())
	if err != nil {
		return nil, err
	}
	return runner.RunPoint(cmd.Context(), sp, what, cmd.ErrOrStderr(), runner.WithCommand("zkbench "+version, os.Args))
}
