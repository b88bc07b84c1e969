package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/plots"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// cleanupTimeout bounds the removal of one namespace.
const cleanupTimeout = 30 * time.Second

// plotFormats are the formats a run draws its plots in.
var plotFormats = []string{"png", "svg"}

// runner runs one planned sweep.
type runner struct {
	plan           *plan
	flags          *runFlags
	stdout, stderr io.Writer
	argv           []string

	res    *results.Run
	log    *workloads.RunLog
	path   string
	faults *faultRig // nil without --fault
	// serverPIDs gives the local servers' processes now (nil: none).
	serverPIDs func() map[string]int
}

func (r *runner) progress(format string, args ...any) {
	fmt.Fprintf(r.stderr, format+"\n", args...)
}

func (r *runner) run(ctx context.Context) (err error) {
	p := r.plan
	start := time.Now()
	r.path = filepath.Join(p.dir, "results.json")
	r.log = workloads.NewRunLog(r.stderr, start)
	r.res = &results.Run{
		Format: results.FormatVersion, ID: p.runID, Tool: "zkbench " + version, Command: r.argv,
		StartedAt: start.UTC(), Status: results.StatusComplete, Config: p.cfg,
		Environment: environment(), ClusterMode: p.mode,
	}
	wrote := false
	defer func() {
		if !wrote {
			// Nothing measured: leave no results folder behind.
			_ = os.Remove(p.dir)
		}
	}()
	r.progress("zkbench run %s: %s workload on %s (%s), variants %s, clients %s, %v per case%s",
		p.runID, p.cfg.Workload, p.kind, p.mode, strings.Join(p.variants, ","), joinInts(p.clients),
		p.cfg.Duration, opsBound(p.cfg.Ops))

	srv, err := startServer(ctx, p, r.flags)
	if err != nil {
		return err
	}
	r.serverPIDs = srv.livePIDs
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serverStopTimeout)
		defer cancel()
		if serr := srv.stop(sctx); serr != nil {
			r.progress("zkbench: stopping the servers: %v", serr)
		}
	}()
	info, err := preflight(ctx, srv, r.flags.preflightTimeout)
	if err != nil {
		return err
	}
	r.res.Cluster = info
	r.progress("  cluster: %s", describeCluster(info))
	maxN := 0
	for _, n := range p.clients {
		maxN = max(maxN, n)
	}
	if err := workloads.CheckClientLimit(info, maxN); err != nil {
		return err
	}
	if r.flags.calibrate {
		if err := r.calibrate(ctx, srv.backend); err != nil {
			return err
		}
	}

	if err := r.setupFaults(ctx, srv); err != nil {
		return err
	}
	defer r.closeFaults()
	runErr := r.sweep(ctx, r.caseBackend(srv), info)
	wrote = len(r.res.Results) > 0
	r.cleanupRun(srv.backend)
	r.res.FinishedAt = time.Now().UTC()
	switch {
	case ctx.Err() != nil:
		r.res.Status, r.res.StatusDetail = results.StatusInterrupted, "stopped by a signal"
	case runErr != nil:
		r.res.Status, r.res.StatusDetail = results.StatusFailed, runErr.Error()
	}
	r.res.Timeline = r.log.Timeline()
	r.res.Leftovers = r.log.LeftoverPaths()
	if wrote {
		if werr := results.WriteFile(r.path, r.res); werr != nil {
			return errors.Join(runErr, werr)
		}
		fmt.Fprintln(r.stdout)
		if serr := analysis.WriteSummary(r.stdout, r.res); serr != nil {
			return serr
		}
		r.presetTable()
		fmt.Fprintf(r.stdout, "\nresults: %s\n", r.path)
		if !r.flags.noPlots {
			r.drawPlots()
		}
	}
	switch {
	case ctx.Err() != nil:
		if wrote {
			return fmt.Errorf("%w: results of the finished cases are in %s", errInterrupted, r.path)
		}
		return fmt.Errorf("%w before any case finished: no results written", errInterrupted)
	case runErr != nil:
		if wrote {
			return fmt.Errorf("%w (results so far in %s)", runErr, r.path)
		}
		return runErr
	}
	return nil
}

// sweep runs every case in order: client counts ascending, every variant at
// each, every repeat. It writes the results file after each case.
func (r *runner) sweep(ctx context.Context, b backends.Backend, info backends.ClusterInfo) error {
	p := r.plan
	if len(p.preset) > 0 {
		return r.presetSweep(ctx, b, info)
	}
	total := len(p.clients) * len(p.variants) * p.cfg.Repeat
	i := 0
	for _, n := range p.clients {
		for _, v := range p.variants {
			for rep := 1; rep <= p.cfg.Repeat; rep++ {
				if ctx.Err() != nil {
					return nil
				}
				i++
				caseID := fmt.Sprintf("%s-%d-%d", v, n, rep)
				ns := backends.Namespace(p.runID) + "/" + caseID
				r.progress("[%d/%d] %s %s, %d clients, repeat %d/%d", i, total, p.cfg.Workload, v, n, rep, p.cfg.Repeat)
				r.log.Event("case", "start "+caseID, results.NoClient)
				res, err := r.runCase(ctx, workloads.Case{
					Backend: b, Cluster: info, Variant: v, Clients: n, Repeat: rep,
					Namespace: ns, Config: p.cfg, Log: r.log, ServerPIDs: r.serverPIDs,
				})
				if cerr := r.removeNamespace(b, ns); cerr != nil {
					res.Notes = append(res.Notes, cerr.Error())
					r.progress("  %v", cerr)
				}
				r.log.Event("case", "end "+caseID, results.NoClient)
				if err != nil {
					r.progress("  failed: %v", err)
					if res.Ops.Issued > 0 {
						r.res.Results = append(r.res.Results, res)
					}
					return fmt.Errorf("case %s with %d clients: %w", v, n, err)
				}
				r.res.Results = append(r.res.Results, res)
				r.progress("  %s", caseLine(&res))
				r.res.Leftovers = r.log.LeftoverPaths()
				r.res.Timeline = r.log.Timeline()
				if err := results.WriteFile(r.path, r.res); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *runner) removeNamespace(b backends.Backend, ns string) error {
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
func (r *runner) cleanupRun(b backends.Backend) {
	if err := r.removeNamespace(b, backends.Namespace(r.plan.runID)); err != nil {
		r.progress("zkbench: %v", err)
	}
}

func (r *runner) drawPlots() {
	dir := filepath.Join(r.plan.dir, "plots")
	paths, err := plots.WriteAll([]*results.Run{r.res}, dir, plotFormats)
	switch {
	case errors.Is(err, plots.ErrNoFigures):
		fmt.Fprintln(r.stdout, "plots: nothing to plot")
	case err != nil:
		fmt.Fprintf(r.stderr, "zkbench: plots: %v (draw them later with `zkbench plot %s`)\n", err, r.path)
	default:
		fmt.Fprintf(r.stdout, "plots: %d files in %s\n", len(paths), dir)
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

func opsBound(ops int64) string {
	if ops <= 0 {
		return ""
	}
	return fmt.Sprintf(" or %d ops", ops)
}

// environment describes the machine the clients ran on.
func environment() results.Environment {
	env := results.Environment{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	env.Hostname, _ = os.Hostname()
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env.Kernel = strings.TrimSpace(string(raw))
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err == nil {
					env.MemTotal = kb * 1024
				}
			}
		}
	}
	return env
}
