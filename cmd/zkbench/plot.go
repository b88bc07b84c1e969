package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/plots"
)

func newPlotCmd() *cobra.Command {
	var out, formats string
	cmd := &cobra.Command{
		Use:   "plot RESULTS...",
		Short: "Draw the plots of one or more results files",
		Long: `plot draws zkbench's charts from results files into a folder, as PNG and/or SVG:
notification fan-out per operation against clients (client and server side),
throughput against clients, server requests per operation by type, latency
percentiles (p50, p99, p99.9) against clients, the latency distribution by
percentile, and throughput over time within each case. Results of several runs
(a ZooKeeper run and an etcd run, or a sweep split over runs) are drawn
together, one panel per backend; results of the same case in several files are
treated as repeats. A RESULTS argument may be a run folder holding results.json.`,
		Example: `  zkbench plot results/run-1/results.json
  zkbench plot results/zk-lock results/etcd-lock -o lock-plots
  zkbench plot run.json --format svg -o figures`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := readResultsArgs(args)
			if err != nil {
				return err
			}
			paths, err := plots.WriteAll(runs, out, splitFormats(formats))
			if err != nil {
				return err
			}
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "plots", "folder to write the plots into (created if missing)")
	cmd.Flags().StringVar(&formats, "format", "png,svg", "image formats, comma-separated: png, svg")
	return cmd
}

func splitFormats(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}
