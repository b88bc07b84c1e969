package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/cluster/saved"
)

// ParseBackend checks --backend; optional says "" is allowed.
func ParseBackend(s string, optional bool) (backends.Kind, error) {
	switch k := backends.Kind(s); k {
	case backends.ZooKeeper, backends.Etcd:
		return k, nil
	case "":
		if optional {
			return "", nil
		}
		return "", errors.New("--backend is required: zookeeper or etcd")
	default:
		return "", fmt.Errorf("--backend %q: want zookeeper or etcd", s)
	}
}

// Clean is what `zkbench clean` removes: the Docker clusters killed
// zkbench processes left, and the run namespaces under backends.Root on
// the cluster at Servers.Endpoints (none: the running cluster of `zkbench
// cluster up` for Kind, if any).
type Clean struct {
	Kind    backends.Kind
	Servers Servers // Endpoints, authentication, PreflightTimeout
	// RunID limits the namespaces to /zkbench/<RunID> ("": every one).
	RunID string
	// DryRun lists what would go and removes nothing.
	DryRun bool
	// Timeout bounds the Docker part, and listing and removing.
	Timeout time.Duration
}

// Run cleans, telling out each thing it removes (or with DryRun would).
// It preflights the cluster first; nothing outside backends.Root is
// touched.
func (c Clean) Run(ctx context.Context, out io.Writer) error {
	dctx, cancel := context.WithTimeout(ctx, c.Timeout)
	dockerErr := CleanDocker(dctx, out, c.DryRun)
	cancel()

	eps := c.Servers.Endpoints
	if len(eps) == 0 {
		if eps = saved.RunningEndpoints(c.Kind); eps == nil {
			fmt.Fprintln(out, noEndpointsMessage(c.Kind))
			return dockerErr
		}
		fmt.Fprintf(out, "No --endpoints: cleaning the local %s cluster of `zkbench cluster up` at %s.\n", c.Kind, strings.Join(eps, ","))
	}
	srv := c.Servers
	srv.Endpoints = eps
	b, err := NewBackend(c.Kind, srv)
	if err != nil {
		return fmt.Errorf("--endpoints: %w", err)
	}
	defer b.Close()
	pctx, cancel := context.WithTimeout(ctx, srv.PreflightTimeout)
	_, err = b.Preflight(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	admin, ok := b.(backends.Admin)
	if !ok {
		return fmt.Errorf("the %s backend cannot list or remove namespaces", c.Kind)
	}
	ctx, cancel = context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	where := fmt.Sprintf("%s at %s", c.Kind, strings.Join(eps, ","))
	return errors.Join(dockerErr, CleanNamespaces(ctx, out, admin, c.RunID, c.DryRun, where))
}

// CleanDocker removes (with dryRun lists) the Docker clusters that killed
// zkbench processes left, through dockercluster.RemoveLeftovers. Where no
// engine is configured it says nothing; an engine that does not answer is
// a line, not an error.
func CleanDocker(ctx context.Context, out io.Writer, dryRun bool) error {
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

// CleanNamespaces removes /zkbench/<runID>, or every /zkbench/<name>,
// checking each path with backends.InNamespace first; where names the
// cluster in what it says.
func CleanNamespaces(ctx context.Context, out io.Writer, admin backends.Admin, runID string, dryRun bool, where string) error {
	names, err := admin.List(ctx, backends.Root)
	if err != nil {
		return fmt.Errorf("list %s: %w", backends.Root, err)
	}
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

func noEndpointsMessage(kind backends.Kind) string {
	if kind == backends.Etcd {
		return "Nothing to clean: with no --endpoints a run uses an embedded etcd inside zkbench, which ends with the run and takes its data with it. " +
			"To clean a cluster, give its --endpoints (no `zkbench cluster up` etcd cluster runs either)."
	}
	return "Nothing to clean: with no --endpoints a run starts ZooKeeper in a temporary folder that is removed when the run ends. " +
		"To clean a cluster, give its --endpoints (no `zkbench cluster up` zookeeper cluster runs either)."
}

// Healthcheck is a container's health check (`zkbench __healthcheck`): it
// preflights the cluster at endpoints once, within timeout, and returns
// what it answered.
func Healthcheck(ctx context.Context, kind backends.Kind, endpoints []string, timeout time.Duration) (backends.ClusterInfo, error) {
	b, err := NewBackend(kind, Servers{Endpoints: endpoints})
	if err != nil {
		return backends.ClusterInfo{}, err
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return b.Preflight(ctx)
}
