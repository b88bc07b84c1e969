package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/report"
	"github.com/zkbench/zkbench/results"
)

func newReportCmd() *cobra.Command {
	var (
		out    string
		opts   report.Options
		target analysis.Target
	)
	cmd := &cobra.Command{
		Use:   "report RESULTS...",
		Short: "Write an HTML and Markdown capacity-planning report from results files",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := results.ReadPaths(args)
			if err != nil {
				return err
			}
			if err := target.Check(); err != nil {
				return err
			}
			opts.Target = target
			paths, err := report.Write(runs, out, opts)
			if err != nil {
				return err
			}
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "output", "o", "report", "folder to write the report into (created if missing)")
	fl.StringVar(&opts.Title, "title", "zkbench report", "report title")
	fl.DurationVar(&target.P99, "target-p99", analysis.DefaultP99, "latency target: the p99 an open-loop case must stay under")
	fl.DurationVar(&target.Handoff, "target-handoff", analysis.DefaultHandoff, "handoff target: the p99 of one release's handoff, for the waiters a lock can have")
	fl.Float64Var(&target.Rate, "target-rate", 0, "throughput target in operations per second (0: none); also the rate the server load is computed at")
	fl.StringVar((*string)(&target.Latency), "latency", "", `latency histogram the target applies to, in the fits and the latency targets (default: the workload's own, e.g. "acquire")`)
	fl.IntVar(&target.AtClients, "at-clients", 0, "client count for the server load table (default: the largest measured)")
	return cmd
}
