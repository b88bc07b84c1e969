// Package runner is zkbench's engine: it runs a sweep of benchmark cases
// (every variant at every client count, every repeat, or a preset's grid)
// against the servers it starts or reaches, with faults, calibration and
// output as options, and returns the run as a results.Run. The CLI only
// turns flags into a Config and options; everything a run does happens here.
//
//	r, err := runner.New(cfg, runner.WithOutput("runs"), runner.WithFaults(fs...))
//	if err != nil { ... }          // refused before any server is touched
//	run, err := r.Run(ctx)         // one case loop for sweeps and presets
//
// Error messages name the command-line flag of the setting at fault
// (--clients, --fault), since that is how users meet them.
package runner

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// DefaultOutput is the folder a run writes <run-id>/results.json into
// unless told otherwise (zkbench run, merge and plan --validate -o): a
// folder of its own, ignored by git, never the source folder of a Go
// package (./results is package results).
const DefaultOutput = "runs"

// OutputHelp ends the help of a flag that defaults to DefaultOutput: why
// it is not ./results, where zkbench once wrote.
const OutputHelp = " (not results/: in a checkout that folder is the source of Go package results)"

// MaxClients is the most clients one case may ask for: far above what one
// machine's sessions sustain, low enough to catch a typo.
const MaxClients = 100000

// ClusterMode is where the servers of a run come from.
type ClusterMode string

// Cluster modes (results.Run.ClusterMode).
const (
	// Embedded: an etcd server in this process (the default for etcd).
	Embedded ClusterMode = "embedded"
	// Local: servers zkbench starts as processes on this machine.
	Local ClusterMode = "local"
	// Remote: a running cluster at Servers.Endpoints.
	Remote ClusterMode = "remote"
	// Docker: servers zkbench starts as containers on a network of their
	// own (cluster/docker), from the images `make images` builds.
	Docker ClusterMode = "docker"
)

// Config is a sweep: what to run, and on which servers. Its zero values
// are not defaults: the CLI supplies those. It encodes as JSON (a Spec's
// part), passwords excluded.
type Config struct {
	Backend  backends.Kind `json:"backend"`
	Workload string        `json:"workload"`
	// Variants run in the order given, at every client count; none: the
	// workload's defaults.
	Variants []string `json:"variants,omitempty"`
	Clients  []int    `json:"clients,omitempty"`
	Repeat   int      `json:"repeat"`
	// Bounds of each case: Duration, and if positive Ops; Warmup runs
	// before measurement and is not recorded.
	Duration time.Duration `json:"duration_ns"`
	Ops      int64         `json:"ops,omitempty"`
	Warmup   time.Duration `json:"warmup_ns"`
	// Load model: Rate > 0 is the open loop; Hold and Think shape a
	// client's turn.
	// Hold Auto is the workload's own hold in a closed loop
	// (workloads.Spec.DefaultHold), else 0; the run records its choice.
	Rate  float64       `json:"rate,omitempty"`
	Hold  time.Duration `json:"hold_ns,omitempty"`
	Think time.Duration `json:"think_ns,omitempty"`
	// Params are workload parameters (workloads.Param*).
	Params  map[string]string `json:"params,omitempty"`
	Servers Servers           `json:"servers"`
}

// Servers says which servers a run uses and how its clients reach them.
type Servers struct {
	// Mode: Embedded (etcd only), Local, Docker or Remote. Empty: Remote when
	// Endpoints are given, else Embedded for etcd and Local for ZooKeeper.
	Mode ClusterMode `json:"mode,omitempty"`
	// Nodes is the number of servers to start (Local: 1 or an odd count
	// up to 7; Embedded: 1).
	Nodes     int      `json:"nodes"`
	Endpoints []string `json:"endpoints,omitempty"`
	// SessionTimeout is ZooKeeper's, LeaseTTL etcd's (at least 2 s).
	SessionTimeout time.Duration `json:"session_timeout_ns"`
	LeaseTTL       time.Duration `json:"lease_ttl_ns"`
	// Conns > 0 shares that many connections among all sessions.
	Conns int `json:"conns,omitempty"`
	// FlowWindow > 0 is etcd's static gRPC flow-control window in bytes
	// (etcdbackend.Config.FlowWindow); 0 is gRPC's dynamic one.
	FlowWindow int `json:"flow_window,omitempty"`
	// etcd security. The password is never encoded: a process given a
	// Spec takes it from its environment (PasswordEnv).
	TLS      etcdbackend.TLSConfig `json:"tls"`
	Username string                `json:"username,omitempty"`
	Password string                `json:"-"`
	// Digest is ZooKeeper's digest authentication, user:password; like
	// the password, never encoded (DigestEnv).
	Digest string `json:"-"`
	// PreflightTimeout bounds the check that the servers answer.
	PreflightTimeout time.Duration `json:"preflight_timeout_ns"`
}

// The environment variables a process run from a Spec reads the secrets a
// Spec leaves out from.
const (
	PasswordEnv = "ZKBENCH_ETCD_PASSWORD"
	DigestEnv   = "ZKBENCH_ZK_DIGEST"
)

// Option sets an optional part of a run.
type Option func(*options)

type options struct {
	runID     string
	output    string // results folder; empty: write no file
	faults    []schedule.Fault
	preset    string
	scale     float64
	calibrate bool
	// requireQuiet stops the run at the first case measured on a loaded
	// machine (WithQuietMachine).
	requireQuiet bool
	progress     io.Writer
	live         bool
	tool         string
	command      []string
	workerEnv    []string
	shard        *shardOpts // nil: one process runs every client
	// serverPIDs are the processes of remote servers on this machine.
	serverPIDs map[string]int
	// dockerLeftovers: remove what killed runs left in Docker first.
	dockerLeftovers bool
}

// WithRunID names the run (its namespace /zkbench/<id> and results folder);
// default: the start time and a random suffix.
func WithRunID(id string) Option { return func(o *options) { o.runID = id } }

// WithOutput writes <dir>/<run-id>/results.json after every case.
// Without it the run writes no file.
func WithOutput(dir string) Option { return func(o *options) { o.output = dir } }

// WithFaults fires faults in every case, timed from when each of the
// case's clients has its session.
func WithFaults(fs ...schedule.Fault) Option {
	return func(o *options) { o.faults = append(o.faults, fs...) }
}

// WithPreset replaces the client sweep by a preset's grid; the only preset
// is workloads.PresetPaperBarrier, scaled by scale (0 < scale <= 1).
func WithPreset(name string, scale float64) Option {
	return func(o *options) { o.preset, o.scale = name, scale }
}

// WithCalibration measures the cluster's raw capacity before the sweep.
func WithCalibration() Option { return func(o *options) { o.calibrate = true } }

// WithQuietMachine makes a case measured on a loaded machine (other
// processes took more of the cores than results.MaxOthersShare, or the
// hypervisor more than results.MaxStealShare) end the run as failed, with
// ErrLoadedMachine, rather than let it be kept: the kept runs behind
// published figures are made with it.
func WithQuietMachine() Option { return func(o *options) { o.requireQuiet = true } }

// WithProgress sends progress lines to w (default: nowhere). With live
// set, w is a terminal: while a case runs, one line is rewritten in place
// with its elapsed time, operations, rate and sessions lost.
func WithProgress(w io.Writer, live bool) Option {
	return func(o *options) { o.progress, o.live = w, live }
}

// WithCommand records the tool and its command line in the results.
func WithCommand(tool string, argv []string) Option {
	return func(o *options) { o.tool, o.command = tool, argv }
}

// WithDockerLeftovers makes the run first remove the Docker clusters that
// zkbench processes killed outright left on this machine's engine
// (cluster/docker's RemoveLeftovers: only clusters whose owner no longer
// runs), whatever servers the run uses: a leftover cluster burns CPU the
// run would measure. Each removal is a progress line. Best effort: where no
// engine answers within 3 s (none at all costs a stat) it says nothing, and
// a failed removal is a progress line; neither fails the run. The shard
// processes of a sharded run skip it: their parent, or their machine, has
// no leftovers of theirs to remove.
func WithDockerLeftovers() Option { return func(o *options) { o.dockerLeftovers = true } }

// WithWorkerEnv adds env to the environment of the lock worker processes
// that pause-client faults run (tests use it to make their binary run main).
func WithWorkerEnv(env ...string) Option {
	return func(o *options) { o.workerEnv = append(o.workerEnv, env...) }
}

// plan is a validated run request.
type plan struct {
	Config
	options
	kind     backends.Kind
	given    Config         // the Config as New was given it (Spec)
	wspec    workloads.Spec // the workload's declaration
	workload workloads.Workload
	// gcPercent is the collector's goal for the run (0: leave it).
	gcPercent int
	mode      ClusterMode
	cfg       results.Config
	dir       string                // <output>/<run-id>; empty without output
	grid      []workloads.PaperCell // the preset's grid; empty without
	settings  []results.Setting     // what Auto settings became
}

// validate checks cfg and opts together, without touching any server, and
// returns the plan or an error that says what to change.
func validate(cfg Config, o options) (*plan, error) {
	p := &plan{Config: cfg, given: cfg, options: o}
	switch cfg.Backend {
	case backends.Etcd, backends.ZooKeeper:
		p.kind = cfg.Backend
	default:
		return nil, fmt.Errorf("--backend %q: want etcd or zookeeper", cfg.Backend)
	}
	spec, err := workloads.Lookup(cfg.Workload)
	if err != nil {
		return nil, fmt.Errorf("--workload: %w", err)
	}
	w := spec.New()
	p.wspec, p.workload = spec, w
	if len(cfg.Variants) == 0 {
		cfg.Variants = spec.DefaultVariants(p.kind)
	}
	if err := spec.CheckVariants(p.kind, cfg.Variants); err != nil {
		return nil, fmt.Errorf("--variants: %w", err)
	}
	if cfg.Params, err = spec.ParamsFor(cfg.Params); err != nil {
		return nil, err
	}
	if err := checkKnobs(spec, cfg); err != nil {
		return nil, err
	}
	var rateSetting *results.Setting
	if cfg.Rate == 0 && spec.DefaultRate > 0 {
		cfg.Rate = spec.DefaultRate
		rateSetting = &results.Setting{Name: "rate", Value: strconv.FormatFloat(cfg.Rate, 'g', -1, 64),
			Why: fmt.Sprintf("the %s workload's default: it runs an open loop", spec.Name)}
	}
	if rc, ok := w.(workloads.RunChecker); ok {
		if err := rc.CheckRun(p.kind, cfg.Variants, cfg.Params); err != nil {
			return nil, err
		}
	}
	p.Variants = nil
	for _, v := range cfg.Variants {
		if !slices.Contains(p.Variants, v) {
			p.Variants = append(p.Variants, v)
		}
	}
	if len(p.Variants) == 0 {
		return nil, fmt.Errorf("--variants: give at least one of %s", strings.Join(spec.VariantNames(p.kind), ", "))
	}
	if err := checkClients(cfg.Clients); err != nil {
		return nil, err
	}
	srv := cfg.Servers
	switch {
	case cfg.Duration <= 0:
		return nil, fmt.Errorf("--duration %v: must be positive (each case needs a time bound)", cfg.Duration)
	case cfg.Ops < 0:
		return nil, fmt.Errorf("--ops %d: must be 0 (no count bound) or positive", cfg.Ops)
	case (cfg.Warmup < 0 && cfg.Warmup != Auto) || (cfg.Hold < 0 && cfg.Hold != Auto) || cfg.Think < 0:
		return nil, errors.New("--warmup, --hold and --think must not be negative")
	case cfg.Rate < 0:
		return nil, fmt.Errorf("--rate %v: must be 0 (closed loop) or positive", cfg.Rate)
	case cfg.Rate > 1e6:
		return nil, fmt.Errorf("--rate %v: more than a million acquisitions per second is not a lock benchmark", cfg.Rate)
	case cfg.Rate > 0 && cfg.Think > 0:
		return nil, fmt.Errorf("--think %v with --rate %v: the open loop schedules every acquisition at the rate, so a think time is not read: give --think for a closed loop or --rate for an open one", cfg.Think, cfg.Rate)
	case cfg.Repeat < 1 || cfg.Repeat > 1000:
		return nil, fmt.Errorf("--repeat %d: must be between 1 and 1000", cfg.Repeat)
	case srv.Conns < 0:
		return nil, fmt.Errorf("--conns %d: must be 0 (one connection per client) or positive", srv.Conns)
	case srv.PreflightTimeout <= 0:
		return nil, errors.New("--preflight-timeout must be positive")
	}
	if p.mode, err = clusterMode(p.kind, srv); err != nil {
		return nil, err
	}
	if err := checkNodes(p.mode, srv.Nodes); err != nil {
		return nil, err
	}
	runIDGiven := p.runID != ""
	if p.runID == "" {
		p.runID = newRunID()
	}
	if err := backends.ValidRunID(p.runID); err != nil {
		return nil, fmt.Errorf("--run-id: %w", err)
	}
	if p.output != "" {
		p.dir = filepath.Join(p.output, p.runID)
	}
	p.cfg = results.Config{
		Workload: spec.Name, Backend: p.kind, Variants: p.Variants, Clients: cfg.Clients, Repeat: cfg.Repeat,
		Duration: cfg.Duration, Ops: cfg.Ops, Warmup: cfg.Warmup, Rate: cfg.Rate, Hold: cfg.Hold, Think: cfg.Think,
		Endpoints: srv.Endpoints,
		Params: map[string]string{
			"cluster": string(p.mode), "nodes": strconv.Itoa(srv.Nodes), "conns": strconv.Itoa(srv.Conns),
		},
	}
	for k, v := range cfg.Params {
		p.cfg.Params[k] = v
	}
	if err := p.expandPreset(); err != nil {
		return nil, err
	}
	// Settings left to the run follow its largest case.
	p.settings = p.chooseSettings()
	if rateSetting != nil {
		p.settings = append(p.settings, *rateSetting)
	}
	srv = p.Servers
	if p.kind == backends.Etcd && srv.LeaseTTL < 2*time.Second {
		return nil, fmt.Errorf("--lease-ttl %v: etcd's minimum lease TTL is 2s", srv.LeaseTTL)
	}
	if p.kind == backends.ZooKeeper && srv.SessionTimeout < zkcluster.MinSession {
		return nil, fmt.Errorf("--session-timeout %v: ZooKeeper grants no session shorter than 2 ticks, and zkbench's clusters tick every %v at the least: give %v or more (a server of your own: 2 x its tickTime, 4s by default)",
			srv.SessionTimeout, zkcluster.MinSession/2, zkcluster.MinSession)
	}
	if srv.FlowWindow != 0 && (srv.FlowWindow < etcdbackend.MinFlowWindow || srv.FlowWindow > etcdbackend.MaxFlowWindow) {
		return nil, fmt.Errorf("--grpc-window %d bytes: give 0 (gRPC's dynamic window) or %dKB to %dMB", srv.FlowWindow,
			etcdbackend.MinFlowWindow>>10, etcdbackend.MaxFlowWindow>>20)
	}
	if srv.FlowWindow > 0 {
		p.cfg.Params["grpc_window"] = strconv.Itoa(srv.FlowWindow)
	}
	if p.kind == backends.Etcd {
		p.cfg.Params["lease_ttl"] = srv.LeaseTTL.String()
	} else {
		p.cfg.Params["session_timeout"] = srv.SessionTimeout.String()
	}
	if len(p.faults) > 0 {
		p.cfg.Params["faults"] = joinFaults(p.faults)
		// What the servers and clients allow is known now: refused before
		// any server starts (setupFaults checks the rest).
		lim := schedule.Limits{Clients: slices.Min(cfg.Clients), Partition: p.mode == Docker}
		if p.mode == Local || p.mode == Docker {
			lim.Servers = srv.Nodes
		}
		if err := schedule.ValidateCluster(p.faults, lim); err != nil {
			return nil, fmt.Errorf("--fault: %w", err)
		}
	}
	if err := checkPauseClients(p); err != nil {
		return nil, err
	}
	if err := checkShards(p, runIDGiven); err != nil {
		return nil, err
	}
	if err := checkOpenFiles(p.maxProcessClients(), p.kind, p.mode, srv.Conns); err != nil {
		return nil, err
	}
	return p, nil
}

// clusterMode resolves where srv's servers come from.
func clusterMode(kind backends.Kind, srv Servers) (ClusterMode, error) {
	switch {
	case len(srv.Endpoints) > 0:
		if srv.Mode != "" && srv.Mode != Remote {
			return "", fmt.Errorf("--cluster %s and --endpoints exclude each other: zkbench either starts servers or uses yours", srv.Mode)
		}
		return Remote, nil
	case srv.Mode == Remote:
		return "", errors.New("a remote cluster needs --endpoints")
	case srv.Mode == "" && kind == backends.Etcd, srv.Mode == Embedded:
		if kind != backends.Etcd {
			return "", errors.New("--cluster embedded: only etcd can run embedded; use --cluster local for ZooKeeper")
		}
		return Embedded, nil
	case srv.Mode == "" || srv.Mode == Local:
		return Local, nil
	case srv.Mode == Docker:
		return Docker, nil
	}
	return "", fmt.Errorf("--cluster %q: want embedded, local or docker (or give --endpoints)", srv.Mode)
}

// checkClients checks a sweep's client counts.
func checkClients(ns []int) error {
	if len(ns) == 0 {
		return errors.New("--clients: give at least one client count, e.g. 10,100,1000")
	}
	for _, n := range ns {
		if n < 1 {
			return fmt.Errorf("--clients: %d: every case needs at least 1 client", n)
		}
		if n > MaxClients {
			return fmt.Errorf("--clients: %d is more than zkbench runs from one machine (at most %d)", n, MaxClients)
		}
	}
	return nil
}

func joinFaults(fs []schedule.Fault) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.String()
	}
	return strings.Join(s, ",")
}

// checkKnobs refuses a run-wide setting the workload does not read: a
// setting silently ignored would measure something else than what was
// asked for.
func checkKnobs(spec workloads.Spec, cfg Config) error {
	for _, k := range []struct {
		knob workloads.Knob
		set  bool
	}{
		{workloads.KnobHold, cfg.Hold != 0 && cfg.Hold != Auto},
		{workloads.KnobThink, cfg.Think != 0},
		{workloads.KnobRate, cfg.Rate != 0},
		{workloads.KnobWarmup, cfg.Warmup != 0 && cfg.Warmup != Auto},
	} {
		if k.set && !spec.Reads(k.knob) {
			return fmt.Errorf("--%s: the %s workload does not read it (%s)", k.knob, spec.Name, workloads.ReadersOf(k.knob))
		}
	}
	return nil
}

// ableWorkloads names the workloads with an ability, with verb in the
// singular (one) or plural: "the lock workload runs", "the lock, queue
// workloads run".
func ableWorkloads(has func(workloads.Abilities) bool, one, many string) string {
	var names []string
	for _, s := range workloads.Specs() {
		if has(s.Abilities) {
			names = append(names, s.Name)
		}
	}
	if len(names) == 1 {
		return "the " + names[0] + " workload " + one
	}
	return "the " + strings.Join(names, ", ") + " workloads " + many
}

// presetOwner is the workload that runs preset name ("" if none).
func presetOwner(name string) string {
	for _, s := range workloads.Specs() {
		if slices.Contains(s.Abilities.Presets, name) {
			return s.Name
		}
	}
	return ""
}

// checkNodes refuses a server count the cluster mode cannot start: local
// servers are 1 or an odd ensemble of at most 7, containers 1 or 3, the
// embedded etcd one member. A count against servers zkbench does not
// start (--endpoints) is not read.
func checkNodes(mode ClusterMode, nodes int) error {
	switch {
	case mode == Local && (nodes < 1 || nodes%2 == 0 || nodes > 7):
		return fmt.Errorf("--nodes %d: want 1 or an odd ensemble size such as 3", nodes)
	case mode == Docker && nodes != 1 && nodes != 3:
		return fmt.Errorf("--nodes %d: --cluster docker starts 1 or 3 servers", nodes)
	case mode == Embedded && nodes != 1:
		return fmt.Errorf("--nodes %d: the embedded etcd has one member; use --cluster local for more", nodes)
	}
	return nil
}
