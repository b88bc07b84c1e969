package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
)

func newCompareCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Print what changed between two runs, figure by figure",
		Long: `compare matches the cases of two results files (workload, backend, variant,
clients) and prints, for each case in both, every figure in A and in B with the
ratio B/A and the change in percent: throughput, latency p50/p99/p99.9 for every
histogram, watch events, wasted wake-ups and requests per operation, client side
and server side. Changes of 10% or more are marked with *. It lists the cases
only one run has, and configuration differences (bounds, hold, think, cluster)
that make the comparison less than like for like. Two runs on different
backends are compared case by case across backends.`,
		Example: `  zkbench compare runs/before/results.json runs/after/results.json
  zkbench compare zk-run etcd-run
  zkbench compare a.json b.json --json | jq '.cases[0]'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := results.ReadPaths(args)
			if err != nil {
				return err
			}
			c, err := analysis.Compare(runs[0], runs[1])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(c)
			}
			return c.Write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return cmd
}
