package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
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
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newClusterUpCmd(), newClusterDownCmd(), newClusterStatusCmd())
	return cmd
}

func newClusterUpCmd() *cobra.Command {
	var backend, dir, state string
	var nodes int
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster in the background and print its endpoints",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClusterUp(cmd, backends.Kind(backend), nodes, dir, state)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&backend, "backend", "", "zookeeper or etcd (required)")
	fl.IntVar(&nodes, "nodes", 1, "members: 1 or 3 (any odd count up to 7)")
	fl.StringVar(&dir, "dir", "", "folder for the servers' data, configs and logs; must be new or empty, and down removes it (default: the state file's path without .json, e.g. cluster-<backend>/ beside the default state file)")
	fl.StringVar(&state, "state", "", "state file (default: $XDG_STATE_HOME/zkbench/cluster-<backend>.json)")
	return cmd
}

func newClusterDownCmd() *cobra.Command {
	var backend, state string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop a cluster started by cluster up and remove its files",
		Args:  cobra.NoArgs,
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
		Args:  cobra.NoArgs,
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
	if state, err = saved.Path(kind, state); err != nil {
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
