package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
)

func newMergeCmd() *cobra.Command {
	var (
		out     string
		noPlots bool
	)
	cmd := &cobra.Command{
		Use:   "merge SHARD_RESULTS...",
		Short: "Merge the results files of a sharded run's shards into one results file",
		Long: `merge joins the results files that the shards of one run wrote (zkbench run
--shards S --shard-index I, one file per shard) into one results file of the
same shape as a run of one process, <output>/<run-id>/results.json, which
report, plot and compare read unchanged.

Counts are summed, latency histograms merged bucket by bucket with no value
dropped, throughput is the sum of the shards' rates, the servers' counters come
from shard 0 (which scraped them for the whole case) and per-operation figures
divide by every shard's operations. Mutual exclusion is judged again over every
shard's critical sections, in fencing-token order. Each result records the
shards' clocks and their skew. See docs/sharding.md.

It refuses files that are not shards, of different runs or configurations,
and a shard index missing or given twice; a case that some shard has no
results for is left out and the merged run is marked failed, naming it.`,
		Example: `  zkbench merge shard-*/lock-2k/results.json -o results
  zkbench merge results/lock-2k/shards/*/lock-2k -o merged`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			shards, err := readResultsArgs(args)
			if err != nil {
				return err
			}
			run, err := results.Merge(shards)
			if err != nil {
				return err
			}
			dir := filepath.Join(out, run.ID)
			if err := results.CheckWritable(dir); err != nil {
				return fmt.Errorf("-o %s: %w", out, err)
			}
			path := filepath.Join(dir, resultsFileName)
			if err := results.WriteFile(path, run); err != nil {
				return err
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := analysis.WriteSummary(stdout, run); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "\nresults: %s (merged from %d shards)\n", path, run.MergedShards)
			if !noPlots {
				drawPlots(stdout, stderr, run, dir, path)
			}
			if run.Status != results.StatusComplete {
				return fmt.Errorf("merged run is %s: %s", run.Status, run.StatusDetail)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "output", "o", "results", "folder for the merged results; writes <output>/<run-id>/results.json")
	fl.BoolVar(&noPlots, "no-plots", false, "do not draw plots")
	return cmd
}
