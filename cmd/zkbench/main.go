// Command zkbench benchmarks coordination recipes (locks, leader election,
// barriers) on ZooKeeper and etcd, naive against herd-free, and measures the
// herd effect: notification fan-out, latency, throughput and server cost.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/internal/procstat"
	"github.com/zkbench/zkbench/runflags"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "zkbench",
		Short:         "Measure the herd effect of coordination recipes on ZooKeeper and etcd",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return runflags.FlagError(c.CommandPath(), err) })
	root.AddCommand(
		newVersionCmd(),
		newEtcdMemberCmd(),
		newHealthcheckCmd(),
		newLockWorkerCmd(),
		newRunCmd(),
		newSummaryCmd(),
		newPlotCmd(),
		newReportCmd(),
		newCompareCmd(),
		newMergeCmd(),
		newClusterCmd(),
		newCleanCmd(),
		newExecCmd(),
		newKubeCmd(),
		newPlanCmd(),
		newDocsCmd(),
	)
	return withHelp(root, "zkbench")
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print zkbench's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "zkbench %s\n", version)
		},
	}
}

func main() {
	// Local shards, client worker processes and the servers a run starts are
	// this process's children: their CPU is zkbench's, not other load.
	procstat.MarkRoot()
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "zkbench:", err)
		os.Exit(1)
	}
}
