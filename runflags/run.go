package runflags

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// Run are `zkbench run`'s flags as given: the run they describe is Spec.
type Run struct {
	Servers
	Workload          string
	Variants, Clients string
	Duration, Warmup  time.Duration
	Hold, Think       time.Duration
	Ops               int64
	Rate              float64
	Repeat            int
	Output            string
	RunID             string
	Calibrate         bool
	RequireQuiet      bool
	Faults            []string
	// SpecFile is --spec: the run described as data.
	SpecFile     string
	Shards       int
	ShardIndex   int
	ShardTimeout time.Duration
	ServerPIDs   string
	recipe       recipeFlags // the workloads' parameters, --preset
}

// faultHelp is --fault's help.
const faultHelp = `inject a fault, ACTION[:ARG]@AT[+FOR], AT counted in each case from when every client
has its session (before the warm-up); repeatable, or comma-separated. Actions: kill-server:I, restart-server:I, kill-leader,
kill-servers:N, pause-server:I (+FOR required), partition-server:I, partition-leader (--cluster docker:
the member leaves its network), latency:BASE[±JITTER], cut-client:C, cut-all,
reset-conns[:C], expire-session:C, pause-client:C (+FOR required; lock and ledger workloads, closed loop:
client C runs in a worker process that is SIGSTOPped, as in a long GC pause), kill-client:C
(SIGKILL of client C's worker process: no release, the server frees its lock when its session
times out; it does not come back), kill-holder (ledger workload: SIGKILL of the next worker client
that holds the lock mid-work, between two steps). Servers and clients count from 0.
Examples: kill-leader@10s+5s, latency:50ms±20ms@5s+10s, cut-client:3@5s+8s, kill-holder@2s`

// requireQuietHelp is --require-quiet's help, on run and plan --validate.
var requireQuietHelp = fmt.Sprintf("stop the run, marked failed, at the first case measured on a loaded machine "+
	"(other processes at %.0f%% of the cores or more, or steal at %.0f%% or more): for runs that are kept and published",
	100*results.MaxOthersShare, 100*results.MaxStealShare)

// Bind declares `zkbench run`'s flags on fl, bound to the Run it returns.
func Bind(fl *pflag.FlagSet) *Run {
	f := &Run{}
	fl.StringVar(&f.Backend, "backend", "etcd", "coordination service: etcd or zookeeper")
	fl.StringVar(&f.Workload, "workload", "lock", "workload: "+strings.Join(workloads.Names(), ", "))
	fl.StringVar(&f.Variants, "variants", "", "comma-separated variants (default: the workload's own; "+variantsUsage()+")")
	fl.StringVar(&f.Clients, "clients", "10,25,50", "comma-separated client counts, one case each (queue: the consumers)")
	fl.DurationVar(&f.Duration, "duration", 5*time.Second, "measured time per case (after the warm-up)")
	fl.Int64Var(&f.Ops, "ops", 0, "stop a case after this many measured operations (0: the duration, and --rounds or --failovers where the workload reads them)")
	f.Warmup = runner.Auto
	fl.Var((*autoDuration)(&f.Warmup), "warmup", "unrecorded warm-up per case; auto: 500ms, or 1ms per client of the largest case when longer")
	f.Hold = runner.Auto
	fl.Var((*autoDuration)(&f.Hold), "hold", fmt.Sprintf("time each client holds the lock (queue: each consumer works on an item before its Ack); "+
		"auto: the workload's own in a closed loop (%s), else 0", holdUsage()))
	fl.DurationVar(&f.Think, "think", 0, "closed loop: pause between a release and the next acquire")
	fl.Float64Var(&f.Rate, "rate", 0, "open loop: operations per second over all clients (0: closed loop; queue: items its producers put per second, default 100; config: updates per second, default 10)")
	fl.IntVar(&f.Repeat, "repeat", 1, "run every case this many times")
	fl.StringSliceVar(&f.Endpoints, "endpoints", nil, "servers of a running cluster, host:port (comma-separated)")
	fl.StringVar(&f.Cluster, "cluster", "", "servers to start when no --endpoints: embedded (etcd only, the default for etcd), local or docker")
	fl.IntVar(&f.Nodes, "nodes", 1, "servers to start with --cluster local (1 or an odd count up to 7) or docker (1 or 3)")
	f.SessionTimeout, f.LeaseTTL = runner.Auto, runner.Auto
	fl.Var((*autoDuration)(&f.SessionTimeout), "session-timeout", "ZooKeeper session timeout, 200ms at the least; auto: 4s, or 3ms per client of the largest case when longer (at most 30s)")
	fl.Var((*autoDuration)(&f.LeaseTTL), "lease-ttl", "etcd session lease TTL (at least 2s); auto: 5s, or 3ms per client of the largest case when longer (at most 30s)")
	fl.IntVar(&f.Conns, "conns", 0, "share K connections among all sessions (hides the herd; 0: one per client)")
	fl.Var((*byteSize)(&f.FlowWindow), "grpc-window", "etcd: a static gRPC flow-control window for each client (64KB to 1024MB), "+
		"which turns off gRPC's bandwidth estimation: with it on (0, gRPC's default) a client pings the server for nearly "+
		"every watch event that arrives on a quiet connection, and the member answers each (docs/results.md, \"gRPC's "+
		"flow control and watch events\")")
	fl.StringVarP(&f.Output, "output", "o", runner.DefaultOutput, "folder for results; each run writes <output>/<run-id>/"+runner.OutputHelp)
	fl.StringVar(&f.RunID, "run-id", "", "run id (default: time-based); names the namespace and the results folder")
	fl.BoolVar(&f.Calibrate, "calibrate", false, "measure the server's raw capacity before the sweep")
	fl.BoolVar(&f.RequireQuiet, "require-quiet", false, requireQuietHelp)
	fl.DurationVar(&f.PreflightTimeout, "preflight-timeout", 10*time.Second, "bound on the check that the servers answer")
	fl.StringArrayVar(&f.Faults, "fault", nil, faultHelp)
	fl.StringVar(&f.SpecFile, "spec", "", "run the run described by this JSON file (- for standard input), as local shards, Kubernetes pods and plan --validate do; "+
		"only --output, --shard-index, --no-plots, --format and --wide may be given beside it")
	fl.IntVar(&f.Shards, "shards", 0, "split every case's clients over this many shards (lock workload); without --shard-index, runs them as processes on this machine and merges their results (docs/sharding.md)")
	fl.IntVar(&f.ShardIndex, "shard-index", -1, "with --shards: run only this shard (0 to S-1) on --endpoints, with --run-id; default: $"+kube.IndexEnv+" when set (a Kubernetes Indexed Job)")
	fl.StringVar(&f.ServerPIDs, "server-pids", "", "the --endpoints' server processes on this machine, endpoint=pid,... (set by zkbench run --shards for its shards)")
	_ = fl.MarkHidden("server-pids")
	fl.DurationVar(&f.ShardTimeout, "shard-timeout", runner.DefaultShardTimeout, "with --shards: bound on each wait for the other shards at a case's start and end barriers")
	f.recipe.bind(fl)
	f.BindAuth(fl)
	return f
}

// Spec is the run the flags set in fl describe, or which flag is wrong.
// Flags the chosen workload, backend or servers do not read are refused,
// not ignored. --shards without a shard index (local shards) is not in
// it: the caller makes this process their parent.
func (f *Run) Spec(fl *pflag.FlagSet) (runner.Spec, error) {
	wspec, err := workloads.Lookup(f.Workload)
	if err != nil {
		return runner.Spec{}, fmt.Errorf("--workload: %w", err)
	}
	if err := f.CheckRead(fl, f.recipe.preset, &wspec); err != nil {
		return runner.Spec{}, err
	}
	clients, err := parseClients(f.Clients)
	if err != nil {
		return runner.Spec{}, err
	}
	cfg := runner.Config{
		Backend: backends.Kind(f.Backend), Workload: f.Workload, Variants: splitList(f.Variants), Clients: clients,
		Repeat: f.Repeat, Duration: f.Duration, Ops: f.Ops, Warmup: f.Warmup,
		Rate: f.Rate, Hold: f.Hold, Think: f.Think,
		Servers: f.Config(),
	}
	if len(cfg.Variants) == 0 {
		cfg.Variants = wspec.DefaultVariants(cfg.Backend)
	}
	if cfg.Params, err = f.recipe.params(fl, wspec, cfg.Variants); err != nil {
		return runner.Spec{}, err
	}
	s := runner.Spec{Config: cfg, RunID: f.RunID, Output: f.Output, Calibrate: f.Calibrate, RequireQuiet: f.RequireQuiet}
	if s.Faults, err = parseFaults(f.Faults); err != nil {
		return runner.Spec{}, err
	}
	if f.recipe.preset != "" {
		s.Preset, s.Scale = f.recipe.preset, f.recipe.scale
	}
	if f.ServerPIDs != "" {
		if s.ServerPIDs, err = parsePIDs(f.ServerPIDs); err != nil {
			return runner.Spec{}, err
		}
	}
	if s.Shard, err = f.shard(fl); err != nil {
		return runner.Spec{}, err
	}
	return s, nil
}

// SpecFromFile reads --spec: the whole run, but for the process's own
// --output and --shard-index (or $JOB_COMPLETION_INDEX), and its secrets
// from the flags or the environment. Of the other flags only the
// command's own (display) may be set beside it.
func (f *Run) SpecFromFile(fl *pflag.FlagSet, stdin io.Reader, own ...string) (runner.Spec, error) {
	var bad []string
	fl.Visit(func(flag *pflag.Flag) {
		if !slices.Contains([]string{"spec", "output", "shard-index"}, flag.Name) && !slices.Contains(own, flag.Name) {
			bad = append(bad, "--"+flag.Name)
		}
	})
	if len(bad) > 0 {
		return runner.Spec{}, fmt.Errorf("%s: the run is described by --spec %s; change it there", strings.Join(bad, ", "), f.SpecFile)
	}
	s, err := runner.ReadSpecFile(f.SpecFile, stdin, f.Password, f.Digest)
	if err != nil {
		return runner.Spec{}, err
	}
	if fl.Changed("output") {
		s.Output = f.Output
	}
	if s.Shard != nil {
		if i, ok, err := shardIndexOf(fl, f.ShardIndex); err != nil {
			return runner.Spec{}, err
		} else if ok {
			s.Shard.Index = i
		}
	} else if fl.Changed("shard-index") {
		return runner.Spec{}, fmt.Errorf("--shard-index: the run of --spec %s is not sharded", f.SpecFile)
	}
	return s, nil
}

// shard is the run's shard from --shards and --shard-index (or
// $JOB_COMPLETION_INDEX): nil without --shards, or with --shards alone
// (this process is then the parent of local shards, see
// runner.SelfShardCommand).
func (f *Run) shard(fl *pflag.FlagSet) (*runner.SpecShard, error) {
	switch {
	case f.Shards == 0 && (fl.Changed("shard-index") || fl.Changed("shard-timeout")):
		return nil, errors.New("--shard-index and --shard-timeout need --shards")
	case f.Shards == 0:
		return nil, nil
	case f.Shards < 0:
		return nil, fmt.Errorf("--shards %d: want the number of shards, at least 1", f.Shards)
	}
	index, ok, err := shardIndexOf(fl, f.ShardIndex)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, nil
	case index < 0:
		return nil, fmt.Errorf("--shard-index %d: want 0 to %d", index, f.Shards-1)
	}
	return &runner.SpecShard{Index: index, Count: f.Shards, Timeout: f.ShardTimeout}, nil
}

// shardIndexOf is --shard-index when given (or set by the caller: its
// default is -1), else $JOB_COMPLETION_INDEX when set (a Kubernetes
// Indexed Job); ok is false with neither.
func shardIndexOf(fl *pflag.FlagSet, flag int) (index int, ok bool, err error) {
	if fl.Changed("shard-index") || flag >= 0 {
		return flag, true, nil
	}
	return kube.IndexFromEnv()
}
