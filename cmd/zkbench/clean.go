package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/runflags"
	"github.com/zkbench/zkbench/runner"
)

// cleanFlags are `zkbench clean`'s flags; the connection ones are run's.
type cleanFlags struct {
	conn    runflags.Servers
	runID   string
	dryRun  bool
	timeout time.Duration
}

func newCleanCmd() *cobra.Command {
	f := &cleanFlags{}
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what interrupted runs left: namespaces under /zkbench, clusters in Docker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClean(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.conn.Backend, "backend", "etcd", "coordination service: etcd or zookeeper")
	fl.StringSliceVar(&f.conn.Endpoints, "endpoints", nil, "servers of the cluster to clean, host:port (comma-separated)")
	fl.StringVar(&f.runID, "run", "", "remove only /zkbench/<ID> (default: every run's namespace)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "list what would be removed; remove nothing")
	fl.DurationVar(&f.conn.PreflightTimeout, "preflight-timeout", 5*time.Second, "bound on the check that the servers answer")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Minute, "bound on listing and removing")
	f.conn.BindAuth(fl)
	return cmd
}

func runClean(cmd *cobra.Command, f *cleanFlags) error {
	kind, err := f.conn.Kind()
	if err != nil {
		return err
	}
	if f.runID != "" {
		if err := backends.ValidRunID(f.runID); err != nil {
			return fmt.Errorf("--run: %w", err)
		}
	}
	if f.conn.PreflightTimeout <= 0 || f.timeout <= 0 {
		return errors.New("--preflight-timeout and --timeout must be positive")
	}
	f.conn.PasswordFromEnv()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := runner.Clean{Kind: kind, Servers: f.conn.Config(), RunID: f.runID, DryRun: f.dryRun, Timeout: f.timeout}
	return c.Run(ctx, cmd.OutOrStdout())
}
