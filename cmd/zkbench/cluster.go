package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/cluster/saved"
	"github.com/zkbench/zkbench/runner"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start, inspect and stop a local ZooKeeper or etcd cluster that outlives zkbench",
		Long: `cluster manages one local cluster per backend that keeps running between zkbench
commands, so that several runs (or runs and your own tools) share the same
servers: "up" starts it and saves its state, "status" checks it, "down" stops it
and removes its files.

State lives in $XDG_STATE_HOME/zkbench (else ~/.local/state/zkbench):
cluster-<backend>.json, and the servers' data, configs and logs in
cluster-<backend>/ next to it. --state FILE keeps a cluster's state elsewhere
(give the same --state to status and down).`,
		Example: `  zkbench cluster up --backend zookeeper --nodes 3
  zkbench run --backend zookeeper --endpoints 127.0.0.1:41811,127.0.0.1:41814,127.0.0.1:41817
  zkbench cluster status
  zkbench cluster down --backend zookeeper`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newClusterUpCmd(), newClusterDownCmd(), newClusterStatusCmd())
	return cmd
}

func newClusterUpCmd() *cobra.Command {
	var (
		backend, dir, state string
		nodes               int
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster in the background and print its endpoints",
		Long: `up starts a local ZooKeeper (Java, from ZOOKEEPER_HOME or Debian's zookeeper
package) or etcd (zkbench itself runs each member) with 1 or 3 members on free
loopback ports, detached from this terminal so that it keeps running after zkbench
exits. It waits until every member serves (and an ensemble has a leader), saves
the cluster's state, and prints its endpoints and a zkbench run command line for it.

If a cluster of the same size is already running for that backend, up says so,
prints its endpoints and exits 0 (so up can be repeated safely); a running
cluster of another size is an error (stop it first with down). State left by a
cluster whose processes are all gone is removed and a fresh cluster started.`,
		Example: `  zkbench cluster up --backend zookeeper
  zkbench cluster up --backend etcd --nodes 3
  zkbench cluster up --backend zookeeper --nodes 3 --dir /data/zk --state /data/zk.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClusterUp(cmd, backends.Kind(backend), nodes, dir, state)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&backend, "backend", "", "zookeeper or etcd (required)")
	fl.IntVar(&nodes, "nodes", 1, "members: 1 or 3 (any odd count up to 7)")
	fl.StringVar(&dir, "dir", "", "folder for the servers' data, configs and logs; must be new or empty, and down removes it (default: cluster-<backend>/ beside the state file)")
	fl.StringVar(&state, "state", "", "state file (default: $XDG_STATE_HOME/zkbench/cluster-<backend>.json)")
	return cmd
}

func newClusterDownCmd() *cobra.Command {
	var backend, state string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop a cluster started by cluster up and remove its files",
		Long: `down stops the members of a cluster started by "cluster up" (SIGTERM, then SIGKILL
after 10 s; etcd followers before the leader), removes its data folder and its
state file. With no --backend it stops every saved cluster. A process is only
signalled if it still runs the member's command line, so a pid reused by another
program is never touched. Stale state, whose processes are already gone, is
removed the same way. With nothing saved, down says so and exits 0.`,
		Example: `  zkbench cluster down --backend etcd
  zkbench cluster down
  zkbench cluster down --state /data/zk.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClusterDown(cmd, backend, state)
		},
	}
	cmd.Flags().StringVar(&backend, "backend", "", "zookeeper or etcd (default: every saved cluster)")
	cmd.Flags().StringVar(&state, "state", "", "state file given to cluster up --state")
	return cmd
}

func newClusterStatusCmd() *cobra.Command {
	var (
		backend, state string
		timeout        time.Duration
		asJSON         bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each saved cluster's members: endpoint, pid, alive, and a live check",
		Long: `status reads every saved cluster (or the one named by --backend or --state) and,
for each member, shows its endpoint, its pid, whether that process still runs, and
what the member answers within --timeout: ZooKeeper's srvr (mode and version) or
etcd's Status (leader or follower, version). A cluster is "serving" when every
member runs and answers, "degraded" when some do, and "stale" when none of its
processes runs any more (remove the state with cluster down). Exits 0 whenever
it could report, whatever the health.`,
		Example: `  zkbench cluster status
  zkbench cluster status --backend etcd --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClusterStatus(cmd, backend, state, timeout, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&backend, "backend", "", "zookeeper or etcd (default: every saved cluster)")
	fl.StringVar(&state, "state", "", "state file given to cluster up --state")
	fl.DurationVar(&timeout, "timeout", 2*time.Second, "bound on each member's live check")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func runClusterUp(cmd *cobra.Command, kindFlag backends.Kind, nodes int, dir, state string) error {
	kind, err := runner.ParseBackend(string(kindFlag), false)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if state == "" {
		if state, err = saved.DefaultPath(kind); err != nil {
			return err
		}
	}
	if state, err = filepath.Abs(state); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	sc, started, err := saved.Up(ctx, kind, nodes, dir, state, func(line string) { fmt.Fprintln(out, line) })
	if err != nil {
		return err
	}
	if started {
		fmt.Fprintf(out, "Ready in %.1fs.\n", time.Since(start).Seconds())
	} else {
		fmt.Fprintf(out, "A %s cluster of %s is already running (started %s); not starting another.\n",
			kind, saved.Plural(len(sc.Members()), "member"), sc.Started.Local().Format(time.DateTime))
	}
	sc.WriteUse(out, state)
	return nil
}

func runClusterDown(cmd *cobra.Command, backend, state string) error {
	kind, err := runner.ParseBackend(backend, true)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	found, paths, err := saved.DownAll(ctx, kind, state, func(line string) { fmt.Fprintln(out, line) })
	if found == 0 && err == nil {
		fmt.Fprintf(out, "No %s to stop: nothing saved at %s.\n", strings.TrimPrefix(string(kind)+" cluster", " "), strings.Join(paths, " or "))
	}
	return err
}

func runClusterStatus(cmd *cobra.Command, backend, state string, timeout time.Duration, asJSON bool) error {
	kind, err := runner.ParseBackend(backend, true)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	reports, paths, err := saved.StatusAll(cmd.Context(), kind, state, timeout)
	if paths == nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return errors.Join(enc.Encode(reports), err)
	}
	if len(reports) == 0 && err == nil {
		fmt.Fprintf(out, "No cluster saved (looked for %s). Start one with `zkbench cluster up --backend zookeeper|etcd`.\n", strings.Join(paths, ", "))
	}
	for _, r := range reports {
		r.Write(out)
	}
	return err
}
