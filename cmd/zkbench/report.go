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
		Long: `report writes report.html (self-contained: plots inlined) and report.md (with its
plots under plots/) into a folder: the setup and environment, findings at a
glance, summary tables (throughput, latency percentiles, watch events, requests
and server figures per operation, fairness and safety), the plots, and capacity
planning.

Capacity planning answers from closed-loop sweeps with each variant's saturation
throughput and the cost of an operation there, a Universal Scalability Law fit
(σ contention, κ coherency: how herd-prone), and how many waiters one lock can
have before a release's handoff p99 passes --target-handoff; latency targets
(p99 under --target-p99) only from open-loop runs (zkbench run --rate), never
from a closed loop's latency, which is N handoffs by construction (zkbench plan
predicts other points). It fits how each cost grows with clients (a line or a
power law, whichever has the higher R²) and gives the server request rate each
variant needs at --at-clients (at --target-rate operations per second if given),
marked EXTRAPOLATED beyond the measured counts. With a calibration in the
results (zkbench run --calibrate) it says how close each case ran to the
server's measured write capacity and, for locks, to the herd-free handoff bound.
Each answer names the runs behind it.`,
		Example: `  zkbench report runs/run-1
  zkbench report zk.json etcd.json -o lock-report --target-p99 20ms
  zkbench report sweep.json --target-rate 500 --at-clients 2000`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := results.ReadPaths(args)
			if err != nil {
				return err
			}
			if target.P99 <= 0 {
				return fmt.Errorf("--target-p99 must be positive, got %v", target.P99)
			}
			if target.Handoff <= 0 {
				return fmt.Errorf("--target-handoff must be positive, got %v", target.Handoff)
			}
			if target.Rate < 0 || target.AtClients < 0 {
				return fmt.Errorf("--target-rate and --at-clients must not be negative")
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
	fl.StringVar((*string)(&target.Latency), "latency", "", `latency histogram the target applies to (default: the workload's own, e.g. "acquire")`)
	fl.IntVar(&target.AtClients, "at-clients", 0, "client count for the server load table (default: the largest measured)")
	return cmd
}
