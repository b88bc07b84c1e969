package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runflags"
)

func newMergeCmd() *cobra.Command {
	var (
		f       *runflags.Merge
		summary summaryFlags
	)
	cmd := &cobra.Command{
		Use:   "merge SHARD_RESULTS... | --shards-dir DIR --shards S",
		Short: "Merge the results files of a sharded run's shards into one results file",
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := summary.options(); err != nil { // refused before reading the shards
				return err
			}
			shardRuns, err := f.ReadShards(cmd.Flags(), args)
			if err != nil {
				return err
			}
			run, err := results.Merge(shardRuns)
			if err != nil {
				return err
			}
			dir, path, err := results.WriteRunDir(f.Output, run)
			if err != nil {
				return err
			}
			return summary.showMerged(cmd.OutOrStdout(), cmd.ErrOrStderr(), run, dir, path, !f.NoPlots)
		},
	}
	f = runflags.BindMerge(cmd.Flags())
	summary.add(cmd.Flags())
	return cmd
}

// showMerged shows merged run run, written into dir (its file path): its
// summary, where it is, and its plots drawn into dir/plots if plots, as
// `zkbench merge` does (and `zkbench kube run` with the run it fetched). A
// run that is not complete is an error.
func (s *summaryFlags) showMerged(stdout, stderr io.Writer, run *results.Run, dir, path string, plots bool) error {
	opts, err := s.options()
	if err != nil {
		return err
	}
	if err := analysis.WriteSummary(stdout, run, opts); err != nil {
		return err
	}
	others := s.others(stdout, stderr)
	fmt.Fprintf(others, "\nresults: %s (merged from %d shards)\n", path, run.MergedShards)
	if more := s.moreColumns(dir); more != "" {
		fmt.Fprintln(others, more)
	}
	if plots {
		drawPlots(others, stderr, run, dir, path)
	}
	if run.Status != results.StatusComplete {
		return fmt.Errorf("merged run is %s: %s", run.Status, run.StatusDetail)
	}
	return nil
}
