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
	"github.com/zkbench/zkbench/runner"
)

// cleanFlags are `zkbench clean`'s flags; the connection ones are run's.
type cleanFlags struct {
	conn    runFlags
	runID   string
	dryRun  bool
	timeout time.Duration
}

func newCleanCmd() *cobra.Command {
	f := &cleanFlags{}
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what interrupted runs left: namespaces under /zkbench, clusters in Docker",
		Long: `clean removes the namespaces that runs killed before their own cleanup left on a
cluster: every /zkbench/<run-id> (or only --run's), with everything below it,
listing each one. It never touches anything outside /zkbench, and leaves
/zkbench itself in place. --dry-run lists what would go and removes nothing.

First it removes the Docker clusters (containers, then network) that zkbench
processes killed outright left on the Docker engine, one line each, and only
those: a cluster whose zkbench still runs, or that another host made, is never
touched; one made by a zkbench older than owner labels is removed
(docs/docker.md). --dry-run lists them. Where no engine is configured
(DOCKER_HOST unset and no /var/run/docker.sock) this part says nothing.
"zkbench run" does the same before it starts its servers.

It checks first that the cluster answers (within --preflight-timeout).

Do not clean a cluster while a run uses it: that run's namespace would be
removed under it. Use --run to remove a single run's.

With no --endpoints clean works on the local cluster of "zkbench cluster up" for
--backend, if one runs. A run with neither --endpoints nor such a cluster used
servers that ended with it (an embedded etcd, or local servers in a temporary
folder) and left nothing to clean.`,
		Example: `  zkbench clean --backend zookeeper --endpoints 10.0.0.1:2181,10.0.0.2:2181 --dry-run
  zkbench clean --backend etcd --endpoints https://etcd-1:2379 --cacert ca.pem --run 20240501-101500-a1b2c3
  zkbench clean --backend zookeeper     # the cluster of zkbench cluster up`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClean(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.conn.backend, "backend", "etcd", "coordination service: etcd or zookeeper")
	fl.StringSliceVar(&f.conn.endpoints, "endpoints", nil, "servers of the cluster to clean, host:port (comma-separated)")
	fl.StringVar(&f.runID, "run", "", "remove only /zkbench/<ID> (default: every run's namespace)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "list what would be removed; remove nothing")
	fl.DurationVar(&f.conn.preflightTimeout, "preflight-timeout", 5*time.Second, "bound on the check that the servers answer")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Minute, "bound on listing and removing")
	addAuthFlags(fl, &f.conn)
	return cmd
}

func runClean(cmd *cobra.Command, f *cleanFlags) error {
	kind, err := runner.ParseBackend(f.conn.backend, false)
	if err != nil {
		return err
	}
	if f.runID != "" {
		if err := backends.ValidRunID(f.runID); err != nil {
			return fmt.Errorf("--run: %w", err)
		}
	}
	if f.conn.preflightTimeout <= 0 || f.timeout <= 0 {
		return errors.New("--preflight-timeout and --timeout must be positive")
	}
	f.conn.passwordFromEnv()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := runner.Clean{Kind: kind, Servers: f.conn.servers(), RunID: f.runID, DryRun: f.dryRun, Timeout: f.timeout}
	return c.Run(ctx, cmd.OutOrStdout())
}
