package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/backends"
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/cluster/saved"
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
	kind, err := parseKind(f.conn.backend, false)
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
	out := cmd.OutOrStdout()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, f.timeout)
	dockerErr := cleanDocker(dctx, out, f.dryRun)
	cancel()

	eps := f.conn.endpoints
	if len(eps) == 0 {
		if eps = localClusterEndpoints(kind); eps == nil {
			fmt.Fprintln(out, noEndpointsMessage(kind))
			return dockerErr
		}
		fmt.Fprintf(out, "No --endpoints: cleaning the local %s cluster of `zkbench cluster up` at %s.\n", kind, strings.Join(eps, ","))
	}

	b, err := newBackend(kind, eps, &f.conn)
	if err != nil {
		return fmt.Errorf("--endpoints: %w", err)
	}
	defer b.Close()
	pctx, cancel := context.WithTimeout(ctx, f.conn.preflightTimeout)
	_, err = b.Preflight(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	admin, ok := b.(backends.Admin)
	if !ok {
		return fmt.Errorf("the %s backend cannot list or remove namespaces", kind)
	}
	ctx, cancel = context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return errors.Join(dockerErr, cleanNamespaces(ctx, out, admin, f.runID, f.dryRun, kind, eps))
}

// cleanDocker removes (with dryRun lists) the Docker clusters that killed
// zkbench processes left, through dockercluster.RemoveLeftovers. Where no
// engine is configured it says nothing; an engine that does not answer is
// a line, not an error.
func cleanDocker(ctx context.Context, out io.Writer, dryRun bool) error {
	if !dockercluster.EngineConfigured() {
		return nil
	}
	found, err := dockercluster.RemoveLeftovers(ctx, out, dryRun)
	switch {
	case errors.Is(err, dockercluster.ErrNoEngine):
		fmt.Fprintf(out, "Docker: not cleaned: %v.\n", err)
		return nil
	case err != nil:
		return fmt.Errorf("docker: %w", err)
	case len(found) == 0:
		fmt.Fprintln(out, "Nothing to clean in Docker: no cluster left by a zkbench that no longer runs.")
	case dryRun:
		fmt.Fprintln(out, "Nothing was removed from Docker (--dry-run).")
	}
	return nil
}

// cleanNamespaces removes /zkbench/<runID>, or every /zkbench/<name>,
// checking each path with backends.InNamespace first.
func cleanNamespaces(ctx context.Context, out io.Writer, admin backends.Admin, runID string, dryRun bool, kind backends.Kind, eps []string) error {
	names, err := admin.List(ctx, backends.Root)
	if err != nil {
		return fmt.Errorf("list %s: %w", backends.Root, err)
	}
	where := fmt.Sprintf("%s at %s", kind, strings.Join(eps, ","))
	if runID != "" {
		if !slices.Contains(names, runID) {
			fmt.Fprintf(out, "Nothing to clean: %s has no %s.\n", where, backends.Namespace(runID))
			return nil
		}
		names = []string{runID}
	}
	var paths []string
	for _, n := range names {
		p := backends.Namespace(n)
		if !backends.InNamespace(p) {
			fmt.Fprintf(out, "Skipping %q below %s: not a run namespace.\n", n, backends.Root)
			continue
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		fmt.Fprintf(out, "Nothing to clean: nothing below %s on %s.\n", backends.Root, where)
		return nil
	}
	if dryRun {
		fmt.Fprintf(out, "Would remove %d namespace(s) on %s:\n", len(paths), where)
		for _, p := range paths {
			fmt.Fprintf(out, "  %s\n", p)
		}
		fmt.Fprintln(out, "Nothing was removed (--dry-run).")
		return nil
	}
	fmt.Fprintf(out, "Removing %d namespace(s) on %s:\n", len(paths), where)
	start := time.Now()
	removed := 0
	var errs []error
	for _, p := range paths {
		if err := admin.DeleteTree(ctx, p); err != nil {
			fmt.Fprintf(out, "  %s: FAILED: %v\n", p, err)
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		removed++
		fmt.Fprintf(out, "  %s removed\n", p)
	}
	fmt.Fprintf(out, "Removed %d of %d in %.1fs; nothing outside %s was touched.\n", removed, len(paths), time.Since(start).Seconds(), backends.Root)
	return errors.Join(errs...)
}

// localClusterEndpoints returns the endpoints of the running cluster of
// `zkbench cluster up` for kind, or nil.
func localClusterEndpoints(kind backends.Kind) []string {
	path, err := saved.DefaultPath(kind)
	if err != nil {
		return nil
	}
	s, err := saved.Load(path)
	if err != nil || s.Backend != kind || s.Running() == 0 {
		return nil
	}
	return s.Endpoints
}

func noEndpointsMessage(kind backends.Kind) string {
	if kind == backends.Etcd {
		return "Nothing to clean: with no --endpoints a run uses an embedded etcd inside zkbench, which ends with the run and takes its data with it. " +
			"To clean a cluster, give its --endpoints (no `zkbench cluster up` etcd cluster runs either)."
	}
	return "Nothing to clean: with no --endpoints a run starts ZooKeeper in a temporary folder that is removed when the run ends. " +
		"To clean a cluster, give its --endpoints (no `zkbench cluster up` zookeeper cluster runs either)."
}
