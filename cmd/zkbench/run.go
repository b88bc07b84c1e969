package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/plots"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runflags"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// runFlags are `zkbench run`'s flags: the run's (runflags) and how the
// command shows it.
type runFlags struct {
	*runflags.Run
	noPlots bool
	summary summaryFlags // --format, --wide
}

func newRunCmd() *cobra.Command {
	cmd, _ := newRunCmdFlags()
	return cmd
}

// newRunCmdFlags is newRunCmd and the flags it binds, for a command that
// takes a run's flags (zkbench kube job).
func newRunCmdFlags() (*cobra.Command, *runFlags) {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a benchmark sweep and write its results",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, f)
		},
	}
	fl := cmd.Flags()
	f.Run = runflags.Bind(fl)
	fl.BoolVar(&f.noPlots, "no-plots", false, "do not draw plots")
	f.summary.add(fl)
	return cmd, f
}

// runRun is `zkbench run`: it runs the sweep, then prints the summary
// table and draws the plots.
func runRun(cmd *cobra.Command, f *runFlags) error {
	f.PasswordFromEnv()
	summary, err := f.summary.options()
	if err != nil {
		return err
	}
	var spec runner.Spec
	if f.SpecFile != "" {
		spec, err = f.SpecFromFile(cmd.Flags(), cmd.InOrStdin(), "no-plots", "format", "wide")
	} else {
		spec, err = f.Spec(cmd.Flags())
	}
	if err != nil {
		return err
	}
	stderr, stdout := cmd.ErrOrStderr(), cmd.OutOrStdout()
	opts := []runner.Option{runner.WithProgress(stderr, runner.IsTerminal(stderr)),
		runner.WithCommand("zkbench "+version, os.Args), runner.WithWorkerEnv(lockWorkerEnv...),
		runner.WithDockerLeftovers()}
	if f.Shards > 0 && spec.Shard == nil {
		opts = append(opts, runner.WithLocalShards(f.Shards, f.ShardTimeout, runner.SelfShardCommand))
	}
	r, err := runner.NewFromSpec(spec, opts...)
	if err != nil {
		return err
	}
	ctx, stop := runner.Interruptible(cmd.Context(), stderr)
	defer stop()
	run, runErr := r.Run(ctx)
	if run == nil {
		return runErr
	}
	others := f.summary.others(stdout, stderr)
	fmt.Fprintln(others)
	if err := analysis.WriteSummary(stdout, run, summary); err != nil {
		return errors.Join(runErr, err)
	}
	if len(r.Preset()) > 0 {
		if err := workloads.WritePaperBarrierTable(others, run.Results); err != nil {
			fmt.Fprintf(stderr, "zkbench: preset table: %v\n", err)
		}
	}
	fmt.Fprintf(others, "\nresults: %s\n", r.Path())
	if more := f.summary.moreColumns(r.Dir()); more != "" {
		fmt.Fprintln(others, more)
	}
	if !f.noPlots {
		drawPlots(others, stderr, run, r.Dir(), r.Path())
	}
	if next := runner.NextHint(run); next != "" {
		fmt.Fprintln(others, next)
	}
	return runErr
}

// drawPlots draws a run's plots into dir/plots, and exports its histograms
// there.
func drawPlots(stdout, stderr io.Writer, run *results.Run, dir, path string) {
	dir = filepath.Join(dir, "plots")
	paths, err := plots.WriteFormats([]*results.Run{run}, dir, "png,svg,"+plots.HgrmFormat)
	switch {
	case errors.Is(err, plots.ErrNoCharts):
		fmt.Fprintln(stdout, "plots: nothing to plot")
	case err != nil:
		fmt.Fprintf(stderr, "zkbench: plots: %v (draw them later with `zkbench plot %s`)\n", err, path)
	default:
		fmt.Fprintf(stdout, "plots: %d files in %s\n", len(paths), dir)
	}
}
