package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner"
)

func newMergeCmd() *cobra.Command {
	var (
		out       string
		noPlots   bool
		shardsDir string
		shards    int
		summary   summaryFlags
	)
	cmd := &cobra.Command{
		Use:   "merge SHARD_RESULTS... | --shards-dir DIR --shards S",
		Short: "Merge the results files of a sharded run's shards into one results file",
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := summary.options(); err != nil { // refused before reading the shards
				return err
			}
			var (
				shardRuns []*results.Run
				err       error
			)
			switch {
			case shardsDir != "" && len(args) > 0:
				return fmt.Errorf("--shards-dir %s and %d files: give the shards' files or --shards-dir, not both", shardsDir, len(args))
			case shardsDir != "":
				if !cmd.Flags().Changed("shards") || shards < 1 {
					return fmt.Errorf("--shards-dir %s: give --shards S, the run's shard count (the merge reads %s/0 to %s/S-1)", shardsDir, shardsDir, shardsDir)
				}
				shardRuns, err = results.ReadShardsDir(shardsDir, shards)
			case cmd.Flags().Changed("shards"):
				return errors.New("--shards: only with --shards-dir DIR (the files given by name say their shard count)")
			case len(args) == 0:
				return errors.New("give the shards' results files, or --shards-dir DIR --shards S")
			default:
				shardRuns, err = results.ReadPaths(args)
			}
			if err != nil {
				return err
			}
			run, err := results.Merge(shardRuns)
			if err != nil {
				return err
			}
			dir, path, err := results.WriteRunDir(out, run)
			if err != nil {
				return err
			}
			return summary.showMerged(cmd.OutOrStdout(), cmd.ErrOrStderr(), run, dir, path, !noPlots)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "output", "o", runner.DefaultOutput, "folder for the merged results; writes <output>/<run-id>/results.json"+runner.OutputHelp)
	fl.BoolVar(&noPlots, "no-plots", false, "do not draw plots")
	fl.StringVar(&shardsDir, "shards-dir", "", "read shard I from DIR/I (its --output folder), I from 0 to --shards - 1, instead of files given by name")
	fl.IntVar(&shards, "shards", 0, "with --shards-dir: the run's shard count")
	summary.add(fl)
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
