package main

import (
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// newLockWorkerCmd is the hidden command that runs one lock client in a
// process of its own, for pause-client faults: `zkbench run` re-executes
// itself with it (workloads.ClientProcesses) and SIGSTOPs it for the
// pause. Its configuration comes as JSON on stdin, not in argv, so that a
// password stays out of the process list; it exits when stdin closes (after
// releasing the lock), when its session is lost, or on SIGTERM or SIGINT.
func newLockWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    workloads.LockWorkerCommand,
		Short:  "Run one lock client (used by zkbench run for pause-client faults)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return workloads.RunLockWorker(ctx, runner.OpenLockWorkerSession, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}

// lockWorkerEnv is added to a worker's environment (tests set it so that
// their binary runs main; see run_test.go's TestMain).
var lockWorkerEnv []string
