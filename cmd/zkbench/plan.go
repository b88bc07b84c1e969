package main

import (
	"cmp"
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
		Short: "Predict a lock workload's waits and server load from kept sweeps",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(cmd, f, args)
		},
	}
	f = runflags.BindPlan(cmd.Flags())
	return cmd
}

func runPlan(cmd *cobra.Command, f *runflags.Plan, args []string) error {
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
		var run *results.Run
		if f.Validate {
			run, err = validateRun(cmd, f, ans.Asked, runs)
		} else {
			var rs []*results.Run
			rs, err = results.ReadPaths([]string{f.Against})
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
	return analysis.WritePlan(cmd.OutOrStdout(), ans, val, f.JSON)
}

// validateRun runs the predicted point in this process, on the servers
// the flags name (or the kind the basis run started), and returns its
// results.
func validateRun(cmd *cobra.Command, f *runflags.Plan, p *analysis.Prediction, runs []*results.Run) (*results.Run, error) {
	spec, err := f.Point().Spec(p, runs)
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
