package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// maxClients is the most clients one case may ask for: far above what one
// machine's sessions sustain, low enough to catch a typo.
const maxClients = 100000

// errInterrupted is returned by the run command when the user stopped it.
var errInterrupted = errors.New("interrupted")

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
	preflightTimeout  time.Duration
	recipe            recipeFlags // election and barrier workloads, --preset
	faults            []string

	// etcd security.
	cacert, cert, key, serverName string
	insecureSkipTLSVerify         bool
	user, password                string
	// ZooKeeper authentication.
	digest string
}

func newRunCmd() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a benchmark sweep and write its results",
		Long: `run benchmarks one workload on one backend: every variant at every client
count (and --repeat times), each case on its own namespace /zkbench/<run-id>/<case>
that is removed afterwards. It writes <output>/<run-id>/results.json after every
case, prints a summary table, and draws the plots next to the results file.

Servers: with no --endpoints, --backend etcd starts an embedded etcd in this process
(the default) and --backend zookeeper starts local ZooKeeper servers (--cluster
local, --nodes 1 or 3); --cluster local with etcd starts etcd member processes.
With --endpoints zkbench uses that cluster and checks it answers before any client
starts.

Each case is bounded by --duration and, if given, --ops (whichever comes first);
--warmup runs before measurement and is not recorded. --rate > 0 selects the open
loop (acquisitions scheduled at that total rate, latency from the scheduled time).

Ctrl-C stops the run: in-flight operations are withdrawn, locks released, the
namespace removed and the results so far written with status "interrupted".
A second Ctrl-C exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.backend, "backend", "etcd", "coordination service: etcd or zookeeper")
	fl.StringVar(&f.workload, "workload", "lock", "workload: "+strings.Join(workloads.Names(), ", "))
	fl.StringVar(&f.variants, "variants", "naive,fair", "comma-separated variants (lock: naive, naive-children, fair, native)")
	fl.StringVar(&f.clients, "clients", "10,50,200", "comma-separated client counts, one case each")
	fl.DurationVar(&f.duration, "duration", 5*time.Second, "measured time per case (after the warm-up)")
	fl.Int64Var(&f.ops, "ops", 0, "stop a case after this many measured operations (0: duration only)")
	fl.DurationVar(&f.warmup, "warmup", 500*time.Millisecond, "unrecorded warm-up per case")
	fl.DurationVar(&f.hold, "hold", 0, "time each client holds the lock")
	fl.DurationVar(&f.think, "think", 0, "closed loop: pause between a release and the next acquire")
	fl.Float64Var(&f.rate, "rate", 0, "open loop: acquisitions per second over all clients (0: closed loop)")
	fl.IntVar(&f.repeat, "repeat", 1, "run every case this many times")
	fl.StringSliceVar(&f.endpoints, "endpoints", nil, "servers of a running cluster, host:port (comma-separated)")
	fl.StringVar(&f.cluster, "cluster", "", "servers to start when no --endpoints: embedded (etcd only, the default for etcd) or local")
	fl.IntVar(&f.nodes, "nodes", 1, "servers to start with --cluster local: 1 or 3")
	fl.DurationVar(&f.sessionTimeout, "session-timeout", 4*time.Second, "ZooKeeper session timeout")
	fl.DurationVar(&f.leaseTTL, "lease-ttl", 5*time.Second, "etcd session lease TTL (at least 2s)")
	fl.IntVar(&f.conns, "conns", 0, "share K connections among all sessions (hides the herd; 0: one per client)")
	fl.StringVarP(&f.output, "output", "o", "results", "folder for results; each run writes <output>/<run-id>/")
	fl.StringVar(&f.runID, "run-id", "", "run id (default: time-based); names the namespace and the results folder")
	fl.BoolVar(&f.noPlots, "no-plots", false, "do not draw plots")
	fl.BoolVar(&f.calibrate, "calibrate", false, "measure the server's raw capacity before the sweep")
	fl.DurationVar(&f.preflightTimeout, "preflight-timeout", 10*time.Second, "bound on the check that the servers answer")
	fl.StringArrayVar(&f.faults, "fault", nil, faultHelp)
	addRecipeFlags(fl, &f.recipe)
	addAuthFlags(fl, f)
	return cmd
}

// plan is a validated run request.
type plan struct {
	kind     backends.Kind
	workload workloads.Workload
	variants []string
	clients  []int
	mode     string // "embedded", "local" or "remote"
	cfg      results.Config
	runID    string
	dir      string                // <output>/<run-id>
	preset   []workloads.PaperCell // --preset's grid; empty without
	faults   []schedule.Fault
}

// validate turns flags into a plan or a clear error, without touching any
// server.
func (f *runFlags) validate() (*plan, error) {
	p := &plan{}
	switch backends.Kind(f.backend) {
	case backends.Etcd, backends.ZooKeeper:
		p.kind = backends.Kind(f.backend)
	default:
		return nil, fmt.Errorf("--backend %q: want etcd or zookeeper", f.backend)
	}
	w, err := workloads.New(f.workload)
	if err != nil {
		return nil, fmt.Errorf("--workload: %w", err)
	}
	p.workload = w
	known := w.Variants(p.kind)
	for _, v := range splitList(f.variants) {
		if !contains(known, v) {
			return nil, fmt.Errorf("--variants: unknown variant %q for workload %s (known: %s)", v, w.Name(), strings.Join(known, ", "))
		}
		if !contains(p.variants, v) {
			p.variants = append(p.variants, v)
		}
	}
	if len(p.variants) == 0 {
		return nil, fmt.Errorf("--variants: give at least one of %s", strings.Join(known, ", "))
	}
	if p.clients, err = parseClients(f.clients); err != nil {
		return nil, err
	}
	switch {
	case f.duration <= 0:
		return nil, fmt.Errorf("--duration %v: must be positive (each case needs a time bound)", f.duration)
	case f.ops < 0:
		return nil, fmt.Errorf("--ops %d: must be 0 (no count bound) or positive", f.ops)
	case f.warmup < 0 || f.hold < 0 || f.think < 0:
		return nil, errors.New("--warmup, --hold and --think must not be negative")
	case f.rate < 0:
		return nil, fmt.Errorf("--rate %v: must be 0 (closed loop) or positive", f.rate)
	case f.rate > 1e6:
		return nil, fmt.Errorf("--rate %v: more than a million acquisitions per second is not a lock benchmark", f.rate)
	case f.repeat < 1 || f.repeat > 1000:
		return nil, fmt.Errorf("--repeat %d: must be between 1 and 1000", f.repeat)
	case f.conns < 0:
		return nil, fmt.Errorf("--conns %d: must be 0 (one connection per client) or positive", f.conns)
	case f.preflightTimeout <= 0:
		return nil, errors.New("--preflight-timeout must be positive")
	}
	switch {
	case len(f.endpoints) > 0:
		if f.cluster != "" {
			return nil, fmt.Errorf("--cluster %s and --endpoints exclude each other: zkbench either starts servers or uses yours", f.cluster)
		}
		p.mode = "remote"
	case f.cluster == "" && p.kind == backends.Etcd, f.cluster == "embedded":
		if p.kind != backends.Etcd {
			return nil, errors.New("--cluster embedded: only etcd can run embedded; use --cluster local for ZooKeeper")
		}
		p.mode = "embedded"
	case f.cluster == "" || f.cluster == "local":
		p.mode = "local"
	default:
		return nil, fmt.Errorf("--cluster %q: want embedded or local (or give --endpoints)", f.cluster)
	}
	if p.mode == "local" && (f.nodes < 1 || f.nodes%2 == 0 || f.nodes > 7) {
		return nil, fmt.Errorf("--nodes %d: want 1 or an odd ensemble size such as 3", f.nodes)
	}
	if p.mode == "embedded" && f.nodes != 1 {
		return nil, fmt.Errorf("--nodes %d: the embedded etcd has one member; use --cluster local for more", f.nodes)
	}
	if p.kind == backends.Etcd && f.leaseTTL < 2*time.Second {
		return nil, fmt.Errorf("--lease-ttl %v: etcd's minimum lease TTL is 2s", f.leaseTTL)
	}
	if p.kind == backends.ZooKeeper && f.sessionTimeout <= 0 {
		return nil, fmt.Errorf("--session-timeout %v: must be positive", f.sessionTimeout)
	}
	p.runID = f.runID
	if p.runID == "" {
		p.runID = newRunID()
	}
	if err := backends.ValidRunID(p.runID); err != nil {
		return nil, fmt.Errorf("--run-id: %w", err)
	}
	p.dir = filepath.Join(f.output, p.runID)
	maxN := 0
	for _, n := range p.clients {
		maxN = max(maxN, n)
	}
	if err := checkOpenFiles(maxN, p.kind, p.mode, f.conns); err != nil {
		return nil, err
	}
	p.cfg = results.Config{
		Workload: w.Name(), Backend: p.kind, Variants: p.variants, Clients: p.clients, Repeat: f.repeat,
		Duration: f.duration, Ops: f.ops, Warmup: f.warmup, Rate: f.rate, Hold: f.hold, Think: f.think,
		Endpoints: f.endpoints,
		Params: map[string]string{
			"cluster": p.mode, "nodes": strconv.Itoa(f.nodes), "conns": strconv.Itoa(f.conns),
		},
	}
	if p.kind == backends.Etcd {
		p.cfg.Params["lease_ttl"] = f.leaseTTL.String()
	} else {
		p.cfg.Params["session_timeout"] = f.sessionTimeout.String()
	}
	if p.faults, err = parseFaults(f.faults); err != nil {
		return nil, err
	}
	if len(p.faults) > 0 {
		p.cfg.Params["faults"] = joinFaults(p.faults)
	}
	if err := checkPauseClients(p, f); err != nil {
		return nil, err
	}
	if err := f.recipe.apply(p); err != nil {
		return nil, err
	}
	return p, nil
}

func parseClients(s string) ([]int, error) {
	var out []int
	for _, part := range splitList(s) {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("--clients: %q is not a whole number", part)
		}
		if n < 1 {
			return nil, fmt.Errorf("--clients: %d: every case needs at least 1 client", n)
		}
		if n > maxClients {
			return nil, fmt.Errorf("--clients: %d is more than zkbench runs from one machine (at most %d)", n, maxClients)
		}
		if !contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--clients: give at least one client count, e.g. 10,100,1000")
	}
	return out, nil
}

// checkOpenFiles makes sure the process may open a file descriptor per
// connection: one per client, two with an embedded server (its end of each
// connection is in this process too). It raises the soft limit to the hard
// one if that is enough, and otherwise says how to raise it.
func checkOpenFiles(clients int, kind backends.Kind, mode string, conns int) error {
	per := 1
	if mode == "embedded" {
		per = 2
	}
	conn := clients
	if conns > 0 {
		conn = min(conns, clients)
	}
	need := uint64(conn*per + 256)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // cannot tell; let the run find out
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max >= need {
		raised := lim
		raised.Cur = need
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%d clients on %s (%s) need about %d open files, but this process may open %d (hard limit %d): "+
		"raise the limit with `ulimit -n %d` (as root, or in /etc/security/limits.conf) or run fewer clients",
		clients, kind, mode, need, lim.Cur, lim.Max, need)
}

func newRunID() string {
	var b [3]byte
	if f, err := os.Open("/dev/urandom"); err == nil {
		_, _ = f.Read(b[:])
		_ = f.Close()
	}
	return fmt.Sprintf("%s-%x", time.Now().UTC().Format("20060102-150405"), b)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// runRun is `zkbench run`.
func runRun(cmd *cobra.Command, f *runFlags) error {
	if f.password == "" {
		f.password = os.Getenv("ZKBENCH_ETCD_PASSWORD")
	}
	p, err := f.validate()
	if err != nil {
		return err
	}
	if err := results.CheckWritable(p.dir); err != nil {
		return fmt.Errorf("-o %s: %w", f.output, err)
	}
	ctx, stop := interruptible(cmd.Context(), cmd.ErrOrStderr())
	defer stop()
	r := &runner{plan: p, flags: f, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), argv: os.Args}
	return r.run(ctx)
}

// interruptible returns a context cancelled by the first SIGINT or SIGTERM;
// a second one exits the process at once (the results file written after
// the last finished case stays valid: every write is atomic).
func interruptible(parent context.Context, stderr interface{ Write([]byte) (int, error) }) (context.Context, func()) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "\nzkbench: interrupted: stopping the case, releasing locks and writing results (Ctrl-C again to exit at once)")
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "zkbench: interrupted twice: exiting now; the results file holds every case that finished")
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
