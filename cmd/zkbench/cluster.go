package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/cluster/saved"
	"github.com/zkbench/zkbench/runner"
)

// Bounds on a detached cluster's members: how long `cluster down` waits
// after SIGTERM before SIGKILL, and on starting and stopping them.
const (
	memberStopGrace   = 10 * time.Second
	localStartTimeout = 90 * time.Second
	serverStopTimeout = 30 * time.Second
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

// parseKind checks --backend; optional says "" is allowed.
func parseKind(s string, optional bool) (backends.Kind, error) {
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

// statePaths returns the state files a command looks at: --state, or the
// default file of the given backend, or of every backend.
func statePaths(kind backends.Kind, state string) ([]string, error) {
	if state != "" {
		return []string{state}, nil
	}
	kinds := []backends.Kind{backends.ZooKeeper, backends.Etcd}
	if kind != "" {
		kinds = []backends.Kind{kind}
	}
	var paths []string
	for _, k := range kinds {
		p, err := saved.DefaultPath(k)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// downHint is the command that stops the cluster saved at path.
func downHint(kind backends.Kind, path string) string {
	if def, err := saved.DefaultPath(kind); err == nil && def == path {
		return "zkbench cluster down --backend " + string(kind)
	}
	return "zkbench cluster down --state " + path
}

func runClusterUp(cmd *cobra.Command, kindFlag backends.Kind, nodes int, dir, state string) error {
	kind, err := parseKind(string(kindFlag), false)
	if err != nil {
		return err
	}
	if nodes < 1 || nodes%2 == 0 || nodes > 7 {
		return fmt.Errorf("--nodes %d: want 1 or an odd ensemble size such as 3", nodes)
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
	unlock, err := saved.LockDir(state)
	if err != nil {
		return err
	}
	defer unlock()

	if old, err := saved.Load(state); err == nil {
		up, all := old.Running(), len(old.Members())
		switch {
		case up == all && old.Backend == kind && old.Nodes == nodes:
			fmt.Fprintf(out, "A %s cluster of %s is already running (started %s); not starting another.\n",
				kind, plural(all, "member"), old.Started.Local().Format(time.DateTime))
			printClusterUse(out, old, state)
			return nil
		case up == all:
			return fmt.Errorf("a %s cluster of %s is already running at %s (state %s): stop it first with `%s`, or give another --state",
				old.Backend, plural(all, "member"), strings.Join(old.Endpoints, ","), state, downHint(old.Backend, state))
		case up > 0:
			return fmt.Errorf("the %s cluster saved in %s is partly running (%d of %d members): stop what is left with `%s`, then start again",
				old.Backend, state, up, all, downHint(old.Backend, state))
		}
		fmt.Fprintf(out, "Removing stale state %s: none of its %d processes runs any more.\n", state, all)
		if err := saved.Remove(old, state); err != nil {
			return err
		}
	} else if !errors.Is(err, saved.ErrNotSaved) {
		return err
	}

	if dir == "" {
		if dir = strings.TrimSuffix(state, filepath.Ext(state)); dir == state {
			dir += ".d"
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if err := checkNewDir(dir); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, localStartTimeout)
	defer cancel()
	fmt.Fprintf(out, "Starting the %s cluster (%s) in %s ...\n", kind, plural(nodes, "member"), dir)
	start := time.Now()
	sc, stopCluster, err := saved.Start(ctx, kind, nodes, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("interrupted while starting; everything started was stopped: %w", err)
		}
		return err
	}
	if err := saved.Write(state, sc); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), serverStopTimeout)
		defer cancel()
		_ = stopCluster(sctx)
		_ = os.RemoveAll(dir)
		return fmt.Errorf("save cluster state (the cluster was stopped again): %w", err)
	}
	fmt.Fprintf(out, "Ready in %.1fs.\n", time.Since(start).Seconds())
	printClusterUse(out, sc, state)
	return nil
}

// checkNewDir refuses a folder that holds anything: down removes the whole
// folder, so it must be zkbench's alone.
func checkNewDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--dir %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("folder %s is not empty, and cluster down would remove it: give an empty or new --dir; "+
			"if an interrupted cluster up left it, check that no server runs from it (pgrep -f %s) and remove it", dir, dir)
	}
	return nil
}

// printClusterUse prints the members and how to use and stop the cluster.
func printClusterUse(w io.Writer, s *saved.Cluster, state string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range s.Members() {
		fmt.Fprintf(tw, "  %s\t%s\tpid %d\n", m.Name, m.Endpoint, m.PID)
	}
	tw.Flush()
	fmt.Fprintf(w, "State: %s\nFiles: %s\n", state, s.Dir)
	fmt.Fprintf(w, "Run against it:\n  zkbench run --backend %s --endpoints %s\n", s.Backend, strings.Join(s.Endpoints, ","))
	fmt.Fprintf(w, "Stop it:\n  %s\n", downHint(s.Backend, state))
}

func runClusterDown(cmd *cobra.Command, backend, state string) error {
	kind, err := parseKind(backend, true)
	if err != nil {
		return err
	}
	paths, err := statePaths(kind, state)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	found := 0
	var errs []error
	for _, path := range paths {
		if path, err = filepath.Abs(path); err != nil {
			return err
		}
		ok, err := downOne(ctx, out, path)
		if ok {
			found++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if found == 0 && len(errs) == 0 {
		what := "cluster"
		if kind != "" {
			what = string(kind) + " cluster"
		}
		fmt.Fprintf(out, "No %s to stop: nothing saved at %s.\n", what, strings.Join(paths, " or "))
	}
	return errors.Join(errs...)
}

// downOne stops the cluster saved at path; found says there was one.
func downOne(ctx context.Context, out io.Writer, path string) (found bool, err error) {
	unlock, err := saved.LockDir(path)
	if err != nil {
		return false, err
	}
	defer unlock()
	s, err := saved.Load(path)
	if errors.Is(err, saved.ErrNotSaved) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	ms := s.Members()
	up := s.Running()
	start := time.Now()
	if up == 0 {
		fmt.Fprintf(out, "The %s cluster saved in %s was not running (stale state): removing its files.\n", s.Backend, path)
	} else {
		fmt.Fprintf(out, "Stopping the %s cluster (%d of %d members running) ...\n", s.Backend, up, len(ms))
		sctx, cancel := context.WithTimeout(ctx, serverStopTimeout)
		defer cancel()
		if err := saved.StopMembers(sctx, saved.StopOrder(sctx, s), memberStopGrace); err != nil {
			return true, fmt.Errorf("stop the %s cluster: %w; its state stays in %s", s.Backend, err, path)
		}
	}
	if err := saved.Remove(s, path); err != nil {
		return true, err
	}
	if up > 0 {
		fmt.Fprintf(out, "Stopped the %s cluster in %.1fs.\n", s.Backend, time.Since(start).Seconds())
	}
	fmt.Fprintf(out, "Removed %s and %s.\n", s.Dir, path)
	return true, nil
}

// newBackend is a backend on endpoints with f's session and authentication
// settings, as `zkbench run --endpoints` builds it.
func newBackend(kind backends.Kind, endpoints []string, f *runFlags) (backends.Backend, error) {
	srv := f.servers()
	srv.Endpoints = endpoints
	return runner.NewBackend(kind, srv)
}

// clusterReport is `cluster status --json`'s view of one saved cluster.
type clusterReport struct {
	Backend   backends.Kind `json:"backend"`
	StateFile string        `json:"state_file"`
	Dir       string        `json:"dir"`
	Started   time.Time     `json:"started"`
	// Health is "serving" (every member runs and answers), "degraded" or
	// "stale" (no member process runs).
	Health    string         `json:"health"`
	Endpoints []string       `json:"endpoints"`
	Members   []memberReport `json:"members"`
}

type memberReport struct {
	Name     string        `json:"name"`
	Endpoint string        `json:"endpoint"`
	PID      int           `json:"pid"`
	Running  bool          `json:"running"`
	Role     string        `json:"role,omitempty"`
	Version  string        `json:"version,omitempty"`
	RTT      time.Duration `json:"rtt_ns,omitempty"`
	Error    string        `json:"error,omitempty"`
	Log      string        `json:"log"`
}

func runClusterStatus(cmd *cobra.Command, backend, state string, timeout time.Duration, asJSON bool) error {
	kind, err := parseKind(backend, true)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	paths, err := statePaths(kind, state)
	if err != nil {
		return err
	}
	reports := []clusterReport{}
	var errs []error
	for _, path := range paths {
		if path, err = filepath.Abs(path); err != nil {
			return err
		}
		s, err := saved.Load(path)
		if errors.Is(err, saved.ErrNotSaved) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reports = append(reports, statusReport(cmd.Context(), s, path, timeout))
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	if len(reports) == 0 && len(errs) == 0 {
		fmt.Fprintf(out, "No cluster saved (looked for %s). Start one with `zkbench cluster up --backend zookeeper|etcd`.\n", strings.Join(paths, ", "))
	}
	for _, r := range reports {
		printReport(out, r)
	}
	return errors.Join(errs...)
}

func statusReport(ctx context.Context, s *saved.Cluster, path string, timeout time.Duration) clusterReport {
	ms := s.Members()
	checks := saved.Checks(ctx, s.Backend, ms, timeout)
	r := clusterReport{Backend: s.Backend, StateFile: path, Dir: s.Dir, Started: s.Started, Endpoints: s.Endpoints}
	running, answering := 0, 0
	for i, m := range ms {
		mr := memberReport{Name: m.Name, Endpoint: m.Endpoint, PID: m.PID, Running: m.Runs(), Log: m.Log}
		if mr.Running {
			running++
		}
		if c := checks[i]; c.Err != nil {
			mr.Error = c.Err.Error()
		} else {
			answering++
			mr.Role, mr.Version, mr.RTT = c.Info.Role, c.Info.Version, c.Info.RTT
		}
		r.Members = append(r.Members, mr)
	}
	switch {
	case running == 0:
		r.Health = "stale"
	case running == len(ms) && answering == len(ms):
		r.Health = "serving"
	default:
		r.Health = "degraded"
	}
	return r
}

func printReport(w io.Writer, r clusterReport) {
	fmt.Fprintf(w, "%s: %s, %s, started %s (state %s)\n",
		r.Backend, r.Health, plural(len(r.Members), "member"), r.Started.Local().Format(time.DateTime), r.StateFile)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range r.Members {
		alive, check := "running", m.Role+" "+m.Version
		switch {
		case !m.Running:
			alive, check = "not running", ""
		case m.Error != "":
			check = "no answer: " + m.Error
		}
		fmt.Fprintf(tw, "  %s\t%s\tpid %d\t%s\t%s\n", m.Name, m.Endpoint, m.PID, alive, check)
	}
	tw.Flush()
	switch r.Health {
	case "serving":
		fmt.Fprintf(w, "  --endpoints %s\n", strings.Join(r.Endpoints, ","))
	case "stale":
		fmt.Fprintf(w, "  None of its processes runs any more: `%s` removes its files.\n", downHint(r.Backend, r.StateFile))
	default:
		for _, m := range r.Members {
			if m.Error != "" {
				fmt.Fprintf(w, "  %s's log: %s\n", m.Name, m.Log)
			}
		}
	}
}

// plural is "1 member" or "3 members".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
