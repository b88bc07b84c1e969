package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/plots"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// runFlags are `zkbench run`'s flags as given.
type runFlags struct {
	backend, workload string
	variants, clients string
	duration, warmup  time.Duration
	hold, think       time.Duration
	ops               int64
	rate              float64
	repeat            int
	endpoints         []string
	cluster           string
	nodes             int
	sessionTimeout    time.Duration
	leaseTTL          time.Duration
	conns             int
	output            string
	runID             string
	noPlots           bool
	calibrate         bool
	requireQuiet      bool
	preflightTimeout  time.Duration
	recipe            recipeFlags // election and barrier workloads, --preset
	faults            []string
	spec              string // --spec: the run described as data
	shards            int
	shardIndex        int
	shardTimeout      time.Duration
	serverPIDs        string
	summary           summaryFlags // --format, --wide

	// etcd security.
	cacert, cert, key, serverName string
	insecureSkipTLSVerify         bool
	user, password                string
	// ZooKeeper authentication.
	digest string
}

func newRunCmd() *cobra.Command {
	cmd, _ := newRunCmdFlags()
	return cmd
}

// newRunCmdFlags is newRunCmd and the flags it binds, for a command that
// takes a run's flags (zkbench kube job).
func newRunCmdFlags() (*cobra.Command, *runFlags) {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a benchmark sweep and write its results",
		Long: `run benchmarks one workload on one backend: every variant at every client
count (and --repeat times), each case on its own namespace /zkbench/<run-id>/<case>
that is removed afterwards. It writes <output>/<run-id>/results.json after every
case, prints the run's summary, and draws the plots next to the results file.

The summary begins with its verdict in words: for each naive variant against
each herd-free one, notifications and server requests per operation at each
client count, and the ratio. A table of the cases follows, then the findings
(errors, safety violations, lost sessions, client|server disagreements with no
documented cause) and the notes, each said once with the cases it applies to.
The table fits 120 columns; --wide prints every column, --format csv, json or
markdown prints the summary in that form (every column) and the other lines to
stderr. zkbench summary prints it again from the results file.

Servers: with no --endpoints, --backend etcd starts an embedded etcd in this process
(the default) and --backend zookeeper starts local ZooKeeper servers (--cluster
local, --nodes 1 or 3); --cluster local with etcd starts etcd member processes;
--cluster docker starts either as containers (--nodes 1 or 3) from the images
"make images" builds (docs/docker.md).
With --endpoints zkbench uses that cluster and checks it answers before any client
starts. Before any server starts, zkbench removes the Docker clusters that zkbench
processes killed outright left behind (never one whose zkbench still runs) and
says so; without a Docker engine it says nothing.

Each case is bounded by --duration and, if given, --ops (whichever comes first);
--warmup runs before measurement and is not recorded. --rate > 0 selects the open
loop (acquisitions scheduled at that total rate, latency from the scheduled time).

Ctrl-C stops the run: in-flight operations are withdrawn, locks released, the
namespace removed and the results so far written with status "interrupted".
A second Ctrl-C exits at once.

While a case runs, a terminal shows one status line (elapsed of the case's
bounds, operations so far, current rate, sessions lost); a log gets a plain
status line every 10 s. Next to the plots, every latency histogram is
exported as HdrHistogram percentile text (.hgrm). Flags that the chosen
workload, backend or servers would not read are refused, not ignored.`,
		Example: `  zkbench run
  zkbench run --wide
  zkbench run --clients 10,100 --format csv > cases.csv
  zkbench run --backend zookeeper --cluster local --nodes 3 --clients 10,100,1000 --variants naive,fair,native
  zkbench run --workload failover --clients 200 --failovers 10
  zkbench run --workload barrier --preset zk-paper-barrier --scale 0.1 --backend zookeeper
  zkbench run --clients 100 --fault kill-leader@10s+5s --cluster local --nodes 3 --duration 30s
  zkbench run --endpoints 10.0.0.1:2379,10.0.0.2:2379 --cacert ca.pem --user bench
  zkbench run --backend zookeeper --shards 4 --clients 2000 --variants naive,fair
  zkbench run --endpoints zk-0:2181 --backend zookeeper --shards 8 --shard-index 3 --run-id lock-16k --clients 16000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.backend, "backend", "etcd", "coordination service: etcd or zookeeper")
	fl.StringVar(&f.workload, "workload", "lock", "workload: "+strings.Join(workloads.Names(), ", "))
	fl.StringVar(&f.variants, "variants", "", "comma-separated variants (default: the workload's own; "+runner.VariantsUsage()+")")
	fl.StringVar(&f.clients, "clients", "10,25,50", "comma-separated client counts, one case each (queue: the consumers)")
	fl.DurationVar(&f.duration, "duration", 5*time.Second, "measured time per case (after the warm-up)")
	fl.Int64Var(&f.ops, "ops", 0, "stop a case after this many measured operations (0: duration only)")
	f.warmup = runner.Auto
	fl.Var((*runner.AutoDuration)(&f.warmup), "warmup", "unrecorded warm-up per case; auto: 500ms, or 1ms per client of the largest case when longer")
	f.hold = runner.Auto
	fl.Var((*runner.AutoDuration)(&f.hold), "hold", fmt.Sprintf("time each client holds the lock (queue: each consumer works on an item before its Ack); "+
		"auto: %v for the lock workload in a closed loop, else 0", workloads.DefaultLockHold))
	fl.DurationVar(&f.think, "think", 0, "closed loop: pause between a release and the next acquire")
	fl.Float64Var(&f.rate, "rate", 0, "open loop: operations per second over all clients (0: closed loop; queue: items its producers put per second, default 100; config: updates per second, default 10)")
	fl.IntVar(&f.repeat, "repeat", 1, "run every case this many times")
	fl.StringSliceVar(&f.endpoints, "endpoints", nil, "servers of a running cluster, host:port (comma-separated)")
	fl.StringVar(&f.cluster, "cluster", "", "servers to start when no --endpoints: embedded (etcd only, the default for etcd), local or docker")
	fl.IntVar(&f.nodes, "nodes", 1, "servers to start with --cluster local or docker: 1 or 3")
	f.sessionTimeout, f.leaseTTL = runner.Auto, runner.Auto
	fl.Var((*runner.AutoDuration)(&f.sessionTimeout), "session-timeout", "ZooKeeper session timeout; auto: 4s, or 3ms per client of the largest case when longer (at most 30s)")
	fl.Var((*runner.AutoDuration)(&f.leaseTTL), "lease-ttl", "etcd session lease TTL (at least 2s); auto: 5s, or 3ms per client of the largest case when longer (at most 30s)")
	fl.IntVar(&f.conns, "conns", 0, "share K connections among all sessions (hides the herd; 0: one per client)")
	fl.StringVarP(&f.output, "output", "o", runner.DefaultOutput, "folder for results; each run writes <output>/<run-id>/"+runner.OutputHelp)
	fl.StringVar(&f.runID, "run-id", "", "run id (default: time-based); names the namespace and the results folder")
	fl.BoolVar(&f.noPlots, "no-plots", false, "do not draw plots")
	fl.BoolVar(&f.calibrate, "calibrate", false, "measure the server's raw capacity before the sweep")
	fl.BoolVar(&f.requireQuiet, "require-quiet", false, requireQuietHelp)
	fl.DurationVar(&f.preflightTimeout, "preflight-timeout", 10*time.Second, "bound on the check that the servers answer")
	fl.StringArrayVar(&f.faults, "fault", nil, faultHelp)
	fl.StringVar(&f.spec, "spec", "", "run the run described by this JSON file (- for standard input), as local shards, Kubernetes pods and plan --validate do; "+
		"only --output, --shard-index, --no-plots, --format and --wide may be given beside it")
	fl.IntVar(&f.shards, "shards", 0, "split every case's clients over this many shards (lock workload); without --shard-index, runs them as processes on this machine and merges their results (docs/sharding.md)")
	fl.IntVar(&f.shardIndex, "shard-index", -1, "with --shards: run only this shard (0 to S-1) on --endpoints, with --run-id; default: $"+jobIndexEnv+" when set (a Kubernetes Indexed Job)")
	fl.StringVar(&f.serverPIDs, "server-pids", "", "the --endpoints' server processes on this machine, endpoint=pid,... (set by zkbench run --shards for its shards)")
	_ = fl.MarkHidden("server-pids")
	fl.DurationVar(&f.shardTimeout, "shard-timeout", runner.DefaultShardTimeout, "with --shards: bound on each wait for the other shards at a case's start and end barriers")
	f.summary.add(fl)
	addRecipeFlags(fl, &f.recipe)
	addAuthFlags(fl, f)
	return cmd, f
}

// requireQuietHelp is --require-quiet's help, on run and plan --validate.
var requireQuietHelp = fmt.Sprintf("stop the run, marked failed, at the first case measured on a loaded machine "+
	"(other processes above %.0f%% of the cores, or steal above %.0f%%): for runs that are kept and published",
	100*results.MaxOthersShare, 100*results.MaxStealShare)

// runSpec turns the flags into the run's Spec, or says which flag is
// wrong. Flags the chosen workload, backend or servers do not read are
// refused, not ignored. --shards without a shard index (local shards) is
// not in it: the caller makes this process their parent.
func (f *runFlags) runSpec(fl *pflag.FlagSet) (runner.Spec, error) {
	wspec, err := workloads.Lookup(f.workload)
	if err != nil {
		return runner.Spec{}, fmt.Errorf("--workload: %w", err)
	}
	if err := checkFlagsRead(fl, f, &wspec); err != nil {
		return runner.Spec{}, err
	}
	clients, err := runner.ParseClients(f.clients)
	if err != nil {
		return runner.Spec{}, err
	}
	cfg := runner.Config{
		Backend: backends.Kind(f.backend), Workload: f.workload, Variants: runner.SplitList(f.variants), Clients: clients,
		Repeat: f.repeat, Duration: f.duration, Ops: f.ops, Warmup: f.warmup,
		Rate: f.rate, Hold: f.hold, Think: f.think,
		Servers: f.servers(),
	}
	if len(cfg.Variants) == 0 {
		cfg.Variants = wspec.DefaultVariants(cfg.Backend)
	}
	if cfg.Params, err = f.recipe.params(fl, wspec, cfg.Variants); err != nil {
		return runner.Spec{}, err
	}
	s := runner.Spec{Config: cfg, RunID: f.runID, Output: f.output, Calibrate: f.calibrate, RequireQuiet: f.requireQuiet}
	if s.Faults, err = runner.ParseFaults(f.faults); err != nil {
		return runner.Spec{}, err
	}
	if f.recipe.preset != "" {
		s.Preset, s.Scale = f.recipe.preset, f.recipe.scale
	}
	if f.serverPIDs != "" {
		if s.ServerPIDs, err = runner.ParsePIDs(f.serverPIDs); err != nil {
			return runner.Spec{}, err
		}
	}
	if s.Shard, err = f.shardOf(fl); err != nil {
		return runner.Spec{}, err
	}
	return s, nil
}

// config is runSpec as a Config and options (zkbench kube job checks a
// shard's run with them).
func (f *runFlags) config(fl *pflag.FlagSet) (runner.Config, []runner.Option, error) {
	if _, err := f.summary.options(); err != nil {
		return runner.Config{}, nil, err
	}
	s, err := f.runSpec(fl)
	if err != nil {
		return runner.Config{}, nil, err
	}
	opts, err := s.Options()
	return s.Config, opts, err
}

// specFromFile reads --spec: the whole run, but for the process's own
// --output and --shard-index (or $JOB_COMPLETION_INDEX), and its secrets
// from the environment.
func (f *runFlags) specFromFile(cmd *cobra.Command) (runner.Spec, error) {
	fl := cmd.Flags()
	var bad []string
	fl.Visit(func(flag *pflag.Flag) {
		switch flag.Name {
		case "spec", "output", "shard-index", "no-plots", "format", "wide":
		default:
			bad = append(bad, "--"+flag.Name)
		}
	})
	if len(bad) > 0 {
		return runner.Spec{}, fmt.Errorf("%s: the run is described by --spec %s; change it there", strings.Join(bad, ", "), f.spec)
	}
	s, err := runner.ReadSpecFile(f.spec, cmd.InOrStdin(), f.password, f.digest)
	if err != nil {
		return runner.Spec{}, err
	}
	if fl.Changed("output") {
		s.Output = f.output
	}
	if s.Shard != nil {
		if i, ok, err := shardIndexOf(fl, f.shardIndex); err != nil {
			return runner.Spec{}, err
		} else if ok {
			s.Shard.Index = i
		}
	} else if fl.Changed("shard-index") {
		return runner.Spec{}, fmt.Errorf("--shard-index: the run of --spec %s is not sharded", f.spec)
	}
	return s, nil
}

// servers are the flags that say which servers to use and how.
func (f *runFlags) servers() runner.Servers {
	return runner.Servers{
		Mode: runner.ClusterMode(f.cluster), Nodes: f.nodes, Endpoints: f.endpoints,
		SessionTimeout: f.sessionTimeout, LeaseTTL: f.leaseTTL, Conns: f.conns,
		TLS: etcdbackend.TLSConfig{
			CAFile: f.cacert, CertFile: f.cert, KeyFile: f.key,
			ServerName: f.serverName, InsecureSkipVerify: f.insecureSkipTLSVerify,
		},
		Username: f.user, Password: f.password, Digest: f.digest,
		PreflightTimeout: f.preflightTimeout,
	}
}

// runRun is `zkbench run`: it runs the sweep, then prints the summary
// table and draws the plots.
func runRun(cmd *cobra.Command, f *runFlags) error {
	f.passwordFromEnv()
	summary, err := f.summary.options()
	if err != nil {
		return err
	}
	var spec runner.Spec
	if f.spec != "" {
		spec, err = f.specFromFile(cmd)
	} else {
		spec, err = f.runSpec(cmd.Flags())
	}
	if err != nil {
		return err
	}
	stderr, stdout := cmd.ErrOrStderr(), cmd.OutOrStdout()
	opts := []runner.Option{runner.WithProgress(stderr, runner.IsTerminal(stderr)),
		runner.WithCommand("zkbench "+version, os.Args), runner.WithWorkerEnv(lockWorkerEnv...),
		runner.WithDockerLeftovers()}
	if f.shards > 0 && spec.Shard == nil {
		opts = append(opts, runner.WithLocalShards(f.shards, f.shardTimeout, runner.SelfShardCommand))
	}
	r, err := runner.NewFromSpec(spec, opts...)
	if err != nil {
		return err
	}
	ctx, stop := runner.Interruptible(cmd.Context(), stderr)
	defer stop()
	run, runErr := r.Run(ctx)
	if run == nil {
		return runErr
	}
	others := f.summary.others(stdout, stderr)
	fmt.Fprintln(others)
	if err := analysis.WriteSummary(stdout, run, summary); err != nil {
		return errors.Join(runErr, err)
	}
	if len(r.Preset()) > 0 {
		if err := workloads.WritePaperBarrierTable(others, run.Results); err != nil {
			fmt.Fprintf(stderr, "zkbench: preset table: %v\n", err)
		}
	}
	fmt.Fprintf(others, "\nresults: %s\n", r.Path())
	if more := f.summary.moreColumns(r.Dir()); more != "" {
		fmt.Fprintln(others, more)
	}
	if !f.noPlots {
		drawPlots(others, stderr, run, r.Dir(), r.Path())
	}
	if next := runner.NextHint(run); next != "" {
		fmt.Fprintln(others, next)
	}
	return runErr
}

// plotFormats are the formats a run draws its plots in; hgrm exports its
// histograms beside them.
var plotFormats = []string{"png", "svg", "hgrm"}

// drawPlots draws a run's plots into dir/plots.
func drawPlots(stdout, stderr io.Writer, run *results.Run, dir, path string) {
	dir = filepath.Join(dir, "plots")
	paths, err := writeFigures([]*results.Run{run}, dir, plotFormats)
	switch {
	case errors.Is(err, plots.ErrNoCharts):
		fmt.Fprintln(stdout, "plots: nothing to plot")
	case err != nil:
		fmt.Fprintf(stderr, "zkbench: plots: %v (draw them later with `zkbench plot %s`)\n", err, path)
	default:
		fmt.Fprintf(stdout, "plots: %d files in %s\n", len(paths), dir)
	}
}
