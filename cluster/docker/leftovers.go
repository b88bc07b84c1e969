package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/zkbench/zkbench/internal/procstat"
)

// probeTimeout bounds the first question to the engine: a run asks before
// it starts its servers, and an engine that has not answered by then is
// taken as none.
const probeTimeout = 3 * time.Second

// Leftover is a cluster whose owner no longer runs, as RemoveLeftovers
// found it.
type Leftover struct {
	// Name is the cluster's name (its LabelCluster value).
	Name string
	// Containers and Networks name what it holds on the engine.
	Containers, Networks []string
	// Why says whose it was and why it is left over: "left by process
	// 1234 (no longer running)".
	Why string
}

// String is "docker cluster NAME WHY: 3 containers, 1 network".
func (l Leftover) String() string {
	return fmt.Sprintf("docker cluster %s %s: %s, %s", l.Name, l.Why,
		count(len(l.Containers), "container"), count(len(l.Networks), "network"))
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// RemoveLeftovers removes the clusters that zkbench processes killed
// outright (SIGKILL, a crash, a reboot) left on the engine, and only
// those: each cluster's containers (forced), then its network. It writes
// one line per cluster to w, "removed docker cluster NAME left by process
// 1234 (no longer running): 3 containers, 1 network"; with dryRun, "would
// remove ..." and it removes nothing. It returns the clusters it found.
//
// A cluster is left over when its owner (LabelOwner) is a process of this
// host that no longer runs: of this boot, its pid is gone or names a
// process started at another time; or of an earlier boot. A cluster whose
// owner runs (a run, a test) is never touched, nor one owned by another
// host (an engine shared through DOCKER_HOST), nor one whose owner this
// process cannot check (another pid namespace, a process /proc hides). A
// cluster with no owner label was made by a zkbench older than the label:
// no zkbench of this version owns it, and it is removed too (an older
// zkbench still running would lose its servers).
//
// ErrNoEngine when no engine answers: at once where the engine's address
// is a unix socket that does not exist, else within ctx and 3 s. ctx
// bounds the rest; a removal that fails is reported on w and in the error,
// and the others go on.
func RemoveLeftovers(ctx context.Context, w io.Writer, dryRun bool) ([]Leftover, error) {
	return removeLeftovers(ctx, w, dryRun, nil)
}

// removeLeftovers is RemoveLeftovers over the clusters only accepts (nil:
// all).
func removeLeftovers(ctx context.Context, w io.Writer, dryRun bool, only func(cluster string) bool) ([]Leftover, error) {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	cli, err := engine(pctx)
	cancel()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ls, err := findLeftovers(ctx, cli, thisProcess(), procstat.StartTicks, only)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, l := range ls {
		if dryRun {
			fmt.Fprintf(w, "would remove %s\n", l)
			continue
		}
		if err := removeCluster(ctx, cli, l.Name); err != nil {
			fmt.Fprintf(w, "could not remove %s: %v\n", l, err)
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(w, "removed %s\n", l)
	}
	return ls, errors.Join(errs...)
}

// findLeftovers lists the containers and networks labelled LabelCluster,
// groups them by cluster, and returns the clusters every owner of which
// judge finds gone, by name.
func findLeftovers(ctx context.Context, cli *client.Client, self owner, startOf func(int) (uint64, error), only func(string) bool) ([]Leftover, error) {
	f := client.Filters{}.Add("label", LabelCluster)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("cluster/docker: list containers: %w", err)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("cluster/docker: list networks: %w", err)
	}
	clusters := map[string]*Leftover{}
	owners := map[string]map[string]bool{} // by cluster: its owner labels
	add := func(labels map[string]string) *Leftover {
		name := labels[LabelCluster]
		if only != nil && !only(name) {
			return nil
		}
		if clusters[name] == nil {
			clusters[name], owners[name] = &Leftover{Name: name}, map[string]bool{}
		}
		owners[name][labels[LabelOwner]] = true
		return clusters[name]
	}
	for _, c := range cs.Items {
		if l := add(c.Labels); l != nil {
			names := make([]string, len(c.Names))
			for i, n := range c.Names {
				names[i] = strings.TrimPrefix(n, "/")
			}
			l.Containers = append(l.Containers, strings.Join(names, ","))
		}
	}
	for _, n := range ns.Items {
		if l := add(n.Labels); l != nil {
			l.Networks = append(l.Networks, n.Name)
		}
	}
	var out []Leftover
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		l, left := clusters[name], true
		for _, o := range slices.Sorted(maps.Keys(owners[name])) {
			gone, why := judge(o, self, startOf)
			left = left && gone
			if l.Why == "" {
				l.Why = why
			}
		}
		if left {
			slices.Sort(l.Containers)
			out = append(out, *l)
		}
	}
	return out, nil
}
