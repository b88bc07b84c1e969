package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/runflags"
	"github.com/zkbench/zkbench/runner"
)

func newExecCmd() *cobra.Command {
	var f *runflags.Exec
	cmd := &cobra.Command{
		Use:   "exec NODE FILE PROGRAM [ARGS...]",
		Short: "Keep PROGRAM running on NODE's data, restarted on each change (the ZooKeeper guide's Executor)",
		Args:  cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, f, args)
		},
	}
	f = runflags.BindExec(cmd.Flags())
	return cmd
}

func runExec(cmd *cobra.Command, f *runflags.Exec, args []string) error {
	kind, servers, cfg, err := f.Spec(cmd.Flags(), args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	cfg.Stdout, cfg.Stderr, cfg.Log, cfg.Signals = cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.ErrOrStderr(), sigs
	return runner.Exec(ctx, kind, servers, cfg)
}
