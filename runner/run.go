package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/procstat"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// cleanupTimeout bounds the removal of one namespace.
const cleanupTimeout = 30 * time.Second

// ErrInterrupted: the run's context ended before the sweep did. The
// results of the cases that finished are kept.
var ErrInterrupted = errors.New("interrupted")

// ErrLoadedMachine: with WithQuietMachine, a case was measured while other
// processes loaded the machine. The results so far are written with the
// run marked failed, so that nothing keeps them as a quiet run.
var ErrLoadedMachine = errors.New("measured on a loaded machine")

// Runner runs one validated sweep. Make one with New; Run it once.
type Runner struct {
	plan *plan

	res    *results.Run
	log    *workloads.RunLog
	status *liveStatus
	faults *faultRig // nil without --fault
	// serverPIDs gives the local servers' processes now (nil: none).
	serverPIDs func() map[string]int
}

// New validates cfg with opts and returns a Runner, or an error that says
// what to change; it touches no server and writes no file.
func New(cfg Config, opts ...Option) (*Runner, error) {
	o := options{scale: 0.1, tool: "zkbench"}
	for _, opt := range opts {
		opt(&o)
	}
	if o.progress == nil {
		o.progress = io.Discard
	}
	p, err := validate(cfg, o)
	if err != nil {
		return nil, err
	}
	return &Runner{plan: p}, nil
}

// RunID is the run's id.
func (r *Runner) RunID() string { return r.plan.runID }

// Dir is the run's results folder (<output>/<run-id>), empty without
// WithOutput.
func (r *Runner) Dir() string { return r.plan.dir }

// Path is the run's results file, empty without WithOutput.
func (r *Runner) Path() string {
	if r.plan.dir == "" {
		return ""
	}
	return filepath.Join(r.plan.dir, "results.json")
}

// Preset is the run's preset grid (nil without WithPreset).
func (r *Runner) Preset() []workloads.PaperCell { return r.plan.grid }

func (r *Runner) progress(format string, args ...any) {
	r.status.println(fmt.Sprintf(format, args...))
}

// Run starts or reaches the servers, preflights them, calibrates and arms
// faults if asked, runs every case in order and stops the servers it
// started. It returns the run (nil if no case finished) with Status
// complete, failed or interrupted; the error says why a run did not
// complete (ErrInterrupted when ctx ended). With WithOutput the results
// file is rewritten after every case, so an interrupted run keeps what it
// measured; a run in which no case finished leaves no folder behind.
func (r *Runner) Run(ctx context.Context) (run *results.Run, err error) {
	p := r.plan
	start := time.Now()
	r.status = newLiveStatus(p.progress, p.live)
	defer r.status.stop()
	r.log = workloads.NewRunLog(r.status, start)
	r.res = &results.Run{
		Format: results.FormatVersion, ID: p.runID, Tool: p.tool, Command: p.command,
		StartedAt: start.UTC(), Status: results.StatusComplete, Config: p.cfg,
		Environment: environment(), ClusterMode: string(p.mode), Settings: p.settings,
	}
	if s := p.shard; s != nil && !s.parent() {
		r.res.Shard = &results.Shard{Index: s.index, Count: s.count}
	}
	if p.dir != "" {
		if err := results.CheckWritable(p.dir); err != nil {
			return nil, fmt.Errorf("-o %s: %w", p.output, err)
		}
		defer func() {
			if run == nil {
				// Nothing measured: leave no results folder behind.
				_ = os.Remove(p.dir)
			}
		}()
	}
	r.progress("zkbench run %s: %s workload on %s (%s), variants %s, clients %s, %v per case%s",
		p.runID, p.cfg.Workload, p.kind, p.mode, strings.Join(p.Variants, ","), joinInts(p.cfg.Clients),
		p.cfg.Duration, opsBound(p.cfg.Ops))
	if _, err := os.Stat(r.Path()); err == nil {
		r.progress("  note: %s holds an earlier run's results: this run writes over them (another --run-id or -o keeps both)", r.Path())
	}
	for _, st := range p.settings {
		if strings.HasPrefix(st.Why, "auto: the default") {
			continue // the defaults need no line
		}
		r.progress("  %s %s: %s", st.Name, st.Value, st.Why)
	}

	if p.dockerLeftovers && (p.shard == nil || p.shard.parent()) {
		r.removeDockerLeftovers(ctx)
	}
	defer withGCPercent(p.gcPercent)()
	srv, err := startServer(ctx, p)
	if err != nil {
		return nil, err
	}
	if pids := p.serverPIDs; len(pids) > 0 && srv.pids == nil {
		srv.pids, srv.livePIDs = pids, func() map[string]int { return pids }
	}
	r.serverPIDs = srv.livePIDs
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serverStopTimeout)
		defer cancel()
		if serr := srv.stop(sctx); serr != nil {
			r.progress("zkbench: stopping the servers: %v", serr)
		}
	}()
	info, err := preflight(ctx, srv, p.Servers.PreflightTimeout)
	if err != nil {
		return nil, err
	}
	r.res.Cluster = info
	r.progress("  cluster: %s", describeCluster(info))
	perIP := maxInt(p.cfg.Clients)
	if s := p.shard; s != nil && !s.parent() {
		_, perIP = results.ShareOf(perIP, s.count-1, s.count) // this shard's clients at most
	}
	if err := workloads.CheckClientLimit(info, perIP); err != nil {
		return nil, err
	}
	if p.calibrate {
		if err := r.calibrate(ctx, srv.backend); err != nil {
			return nil, err
		}
	}
	if err := r.setupFaults(ctx, srv); err != nil {
		return nil, err
	}
	defer r.closeFaults()
	var runErr error
	if p.shard.parent() {
		runErr = r.runLocalShards(ctx, srv)
	} else {
		runErr = r.sweep(ctx, r.caseBackend(srv), info)
	}
	if p.shard == nil || p.shard.index <= 0 {
		// One process removes the run's namespace: shard 0 after its
		// last case's end barrier, or the parent of local shards.
		r.cleanupRun(srv.backend)
	}
	r.res.FinishedAt = time.Now().UTC()
	switch {
	case ctx.Err() != nil:
		r.res.Status, r.res.StatusDetail = results.StatusInterrupted, "stopped by a signal"
	case runErr != nil:
		r.res.Status, r.res.StatusDetail = results.StatusFailed, runErr.Error()
	}
	r.res.Timeline = r.log.Timeline()
	r.res.Leftovers = r.log.LeftoverPaths()
	if len(r.res.Results) == 0 {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w before any case finished: no results written", ErrInterrupted)
		}
		return nil, runErr
	}
	if werr := r.write(); werr != nil {
		return r.res, errors.Join(runErr, werr)
	}
	switch {
	case ctx.Err() != nil:
		return r.res, fmt.Errorf("%w: results of the finished cases are in %s", ErrInterrupted, r.where())
	case runErr != nil:
		return r.res, fmt.Errorf("%w (results so far in %s)", runErr, r.where())
	}
	return r.res, nil
}

// write saves the run as it stands, if it has an output.
func (r *Runner) write() error {
	if r.plan.dir == "" {
		return nil
	}
	return results.WriteFile(r.Path(), r.res)
}

func (r *Runner) where() string {
	if r.plan.dir == "" {
		return "the returned run"
	}
	return r.Path()
}

// sweep runs every case in order, the one loop for sweeps and presets, and
// writes the results file after each case.
func (r *Runner) sweep(ctx context.Context, b backends.Backend, info backends.ClusterInfo) error {
	p := r.plan
	cases := p.cases()
	for i, sc := range cases {
		if ctx.Err() != nil {
			return nil
		}
		cfg := p.cfg
		if sc.ops > 0 {
			cfg.Ops = sc.ops
		}
		ns := backends.Namespace(p.runID) + "/" + sc.id
		r.progress("[%d/%d] %s", i+1, len(cases), sc.label)
		r.log.Event("case", "start "+sc.id, results.NoClient)
		c := workloads.Case{
			Backend: b, Cluster: info, Variant: sc.variant, Clients: sc.clients, Repeat: sc.repeat,
			Namespace: ns, Config: cfg, Log: r.log, ServerPIDs: r.serverPIDs,
		}
		if p.shard != nil {
			// This shard's share of the clients, numbered across shards.
			c.Shard = r.caseShard(b, sc.id, sc.clients)
			_, c.Clients = results.ShareOf(sc.clients, p.shard.index, p.shard.count)
			c.Log = globalClients{Recorder: r.log, first: c.Shard.FirstClient}
			// The open loop's rate is every shard's together.
			c.Config.Rate = cfg.Rate / float64(p.shard.count)
		}
		res, err := r.runCase(ctx, c)
		res.Clients = sc.clients
		if p.shard != nil && p.shard.index != 0 {
			// Shard 0 removes the namespace, after every shard's end barrier.
		} else if cerr := r.removeNamespace(b, ns); cerr != nil {
			res.Notes = append(res.Notes, cerr.Error())
			r.progress("  %v", cerr)
		}
		r.log.Event("case", "end "+sc.id, results.NoClient)
		if err != nil {
			r.progress("  failed: %v", err)
			if res.Ops.Issued > 0 {
				r.res.Results = append(r.res.Results, res)
			}
			return fmt.Errorf("case %s with %d clients: %w", sc.variant, sc.clients, err)
		}
		r.res.Results = append(r.res.Results, res)
		r.progress("  %s", caseLine(&res))
		r.res.Leftovers = r.log.LeftoverPaths()
		r.res.Timeline = r.log.Timeline()
		if err := r.write(); err != nil {
			return err
		}
		if x := res.Loaded; x != nil && p.requireQuiet {
			return fmt.Errorf("case %s with %d clients was %w (%s); --require-quiet stops the run rather than keep it: "+
				"end the other work (top or ps shows it) and run again", sc.variant, sc.clients, ErrLoadedMachine, x.Detail)
		}
	}
	return nil
}

func (r *Runner) removeNamespace(b backends.Backend, ns string) error {
	admin, ok := b.(backends.Admin)
	if !ok {
		return fmt.Errorf("namespace %s not removed: the backend has no Admin", ns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := admin.DeleteTree(ctx, ns); err != nil && !errors.Is(err, backends.ErrNoNode) {
		return fmt.Errorf("namespace %s not removed: %w", ns, err)
	}
	return nil
}

// cleanupRun removes the run's namespace itself (on ZooKeeper, the
// persistent parent of the case namespaces).
func (r *Runner) cleanupRun(b backends.Backend) {
	if err := r.removeNamespace(b, backends.Namespace(r.plan.runID)); err != nil {
		r.progress("zkbench: %v", err)
	}
}

// caseLine is the progress line printed when a case ends.
func caseLine(res *results.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d ops in %v (%.1f/s)", res.Ops.Succeeded, res.Elapsed.Round(time.Millisecond), res.Throughput)
	if name, h := results.PrimaryLatency(res); h != nil && h.Count > 0 {
		fmt.Fprintf(&b, ", %s p50 %s p99 %s", name,
			results.FormatDuration(time.Duration(h.P50)), results.FormatDuration(time.Duration(h.P99)))
	}
	cli, okc := res.PerOp[figures.WatchEvents.Key]
	srv, oks := res.PerOp[figures.ServerWatchEvents.Key]
	if okc || oks {
		fmt.Fprintf(&b, ", watch events/op %s | %s", figure(cli, okc), figure(srv, oks))
	}
	fmt.Fprintf(&b, ", violations %d, stopped by %s", res.Safety.Violations, res.StoppedBy)
	if n := res.Ops.StillWaiting; n > 0 {
		fmt.Fprintf(&b, ", %d still waiting at the end", n)
	}
	if l := res.Load; l != nil && !l.CPUNotMeasured {
		fmt.Fprintf(&b, ", client cpu %.0f%% of %d cores", 100*l.CPUFraction, l.Cores)
	}
	if cb := res.ClientBound; cb != nil {
		fmt.Fprintf(&b, ", CLIENT-BOUND: %s", cb.Detail)
	}
	if x := res.Loaded; x != nil {
		fmt.Fprintf(&b, ", LOADED MACHINE: %s", x.Detail)
	}
	if n := len(slices.DeleteFunc(slices.Clone(res.Notes), func(n string) bool { return !figures.Unexplained(n) })); n > 0 {
		fmt.Fprintf(&b, ", %d client|server difference(s) UNEXPLAINED (see the notes)", n)
	}
	return b.String()
}

func figure(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func describeCluster(info backends.ClusterInfo) string {
	var parts []string
	for _, m := range info.Members {
		s := m.Endpoint
		if m.Version != "" {
			s += " v" + strings.TrimPrefix(m.Version, "v")
		}
		if m.Role != "" {
			s += " " + m.Role
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s, %d member(s): %s", info.Kind, len(info.Members), strings.Join(parts, ", "))
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func opsBound(ops int64) string {
	if ops <= 0 {
		return ""
	}
	return fmt.Sprintf(" or %d ops", ops)
}

// checkOpenFiles makes sure the process may open a file descriptor per
// connection: one per client, two with an embedded server (its end of each
// connection is in this process too). It raises the soft limit to the hard
// one if that is enough, and otherwise says how to raise it.
func checkOpenFiles(clients int, kind backends.Kind, mode ClusterMode, conns int) error {
	per := 1
	if mode == Embedded {
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

// environment describes the machine the clients ran on.
func environment() results.Environment {
	env := results.Environment{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	env.Hostname, _ = os.Hostname()
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env.Kernel = strings.TrimSpace(string(raw))
	}
	env.MemTotal = procstat.MemTotal()
	return env
}
