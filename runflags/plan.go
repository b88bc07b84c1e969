package runflags

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// Plan are `zkbench plan`'s flags: the workload to predict, and the run
// that validates the prediction (--validate) or the one made already
// (--against).
type Plan struct {
	Workload, Backend, Variant string
	Clients                    int
	Every, Think, Hold         time.Duration
	// Size and Rate are a fan-out workload's (config) config size and
	// updates per second.
	Size string
	Rate float64
	// SessionTimeout, Tick and Failovers are a failover's: the
	// candidates' session timeout (lease TTL), ZooKeeper's tick, and the
	// leader crashes --validate runs.
	SessionTimeout, Tick time.Duration
	Failovers            int
	Target               string
	Seed                 uint64
	JSON                 bool
	// Validate runs the predicted point with these.
	Validate         bool
	Duration, Warmup time.Duration
	Output, RunID    string
	Cluster          string
	Endpoints        []string
	RequireQuiet     bool
	// Against is a run made already.
	Against string
	// ServiceFrom is a run whose handoffs are the service.
	ServiceFrom string
}

// validateOnly are the flags read only with --validate.
var validateOnly = []string{"duration", "warmup", "output", "run-id", "cluster", "endpoints", "require-quiet"}

// lockOnly are the flags read only for a lock workload, fanOutOnly only
// for a fan-out one.
var (
	lockOnly     = []string{"every", "think", "hold", "seed", "service-from"}
	fanOutOnly   = []string{"size", "rate"}
	failoverOnly = []string{"session-timeout", "tick", "failovers"}
)

// BindPlan declares plan's flags on fl.
func BindPlan(fl *pflag.FlagSet) *Plan {
	f := &Plan{}
	fl.StringVar(&f.Workload, "workload", workloads.Planned()[0], "workload to plan: "+strings.Join(workloads.Planned(), ", ")+
		" (a lock: --every or --think, --hold), "+strings.Join(workloads.PlannedFanOut(), ", ")+" (a config center: --size, --rate) or "+
		strings.Join(workloads.PlannedFailover(), ", ")+" (a leader's process dying: --session-timeout)")
	fl.StringVar(&f.Backend, "backend", "", "backend (needed when the results hold more than one)")
	fl.StringVar(&f.Variant, "variant", "", "variant to plan (naive, fair, native...); every other variant is shown beside it")
	fl.IntVar(&f.Clients, "clients", 0, "workers (clients) sharing the lock, a config center's watchers, or an election's candidates")
	fl.DurationVar(&f.SessionTimeout, "session-timeout", 0, "a failover's session timeout (ZooKeeper) or lease TTL (etcd, whole seconds)")
	fl.DurationVar(&f.Tick, "tick", 0, "a failover on ZooKeeper: the ensemble's tickTime (default: the tick zkbench's local clusters run at that session timeout)")
	fl.IntVar(&f.Failovers, "failovers", 20, "with --validate, a failover: leaders crashed (at most candidates-1)")
	fl.StringVar(&f.Size, "size", "", "a config center's config size (512, 64KB, 1MB; KB = 1024 bytes)")
	fl.Float64Var(&f.Rate, "rate", 0, "a config center's updates per second")
	fl.DurationVar(&f.Every, "every", 0, "each worker needs the lock once per this period (open loop)")
	fl.DurationVar(&f.Think, "think", 0, "each worker asks again this long after its release (finite source)")
	fl.DurationVar(&f.Hold, "hold", 0, "how long each worker holds the lock")
	fl.StringVar(&f.Target, "target", "p99=50ms", "latency target: pQ=BOUND, the wait (a lock), the propagation to the last watcher (a config center: p50 or p99) or the failover (p50 or p99; no default) at percentile Q at most BOUND")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the simulation")
	fl.BoolVar(&f.JSON, "json", false, "print the answer as JSON")
	fl.BoolVar(&f.Validate, "validate", false, "run the predicted point and print predicted against measured")
	fl.DurationVar(&f.Duration, "duration", 15*time.Second, "with --validate: measured time of the run")
	fl.DurationVar(&f.Warmup, "warmup", 2*time.Second, "with --validate: unrecorded warm-up of the run")
	fl.StringVarP(&f.Output, "output", "o", runner.DefaultOutput, "with --validate: folder for the run's results"+runner.OutputHelp)
	fl.StringVar(&f.RunID, "run-id", "", "with --validate: run id (default: plan-<variant>-<clients>-<time>; config: plan-config-<variant>-<watchers>-<time>, failover: plan-failover-<variant>-<candidates>-<time>)")
	fl.StringVar(&f.Cluster, "cluster", "", "with --validate: servers to start (embedded, local, docker); default: the basis run's")
	fl.StringSliceVar(&f.Endpoints, "endpoints", nil, "with --validate: servers of a running cluster instead")
	fl.BoolVar(&f.RequireQuiet, "require-quiet", false, requireQuietHelp)
	fl.StringVar(&f.ServiceFrom, "service-from", "", "draw every acquire's service from the handoffs of this run (a results file or run folder; open loop allowed) instead of the sweep's: a run at the workload's own duty cycle")
	fl.StringVar(&f.Against, "against", "", "print predicted against measured for a run already made (a results file or run folder) instead of running one")
	return f
}

// FanOut says whether the flags ask about a fan-out workload (a config
// center) rather than a lock.
func (f *Plan) FanOut() bool { return slices.Contains(workloads.PlannedFanOut(), f.Workload) }

// Failover says whether the flags ask about a leader's failover.
func (f *Plan) Failover() bool { return slices.Contains(workloads.PlannedFailover(), f.Workload) }

// planKinds are the kinds of plan: their workloads, what they are, and the
// flags only they read.
func planKinds() []struct {
	names []string
	what  string
	only  []string
} {
	return []struct {
		names []string
		what  string
		only  []string
	}{
		{workloads.Planned(), "a lock", lockOnly},
		{workloads.PlannedFanOut(), "a config center", fanOutOnly},
		{workloads.PlannedFailover(), "a failover", failoverOnly},
	}
}

// check refuses what the asked kind of plan does not read from the flags
// set in fl.
func (f *Plan) check(fl *pflag.FlagSet) error {
	mine := -1
	var kinds []string
	for i, k := range planKinds() {
		if slices.Contains(k.names, f.Workload) {
			mine = i
		}
		kinds = append(kinds, strings.Join(k.names, ", ")+" ("+k.what+")")
	}
	switch {
	case mine < 0:
		return fmt.Errorf("--workload %s: plan models %s", f.Workload, strings.Join(kinds, ", "))
	case f.Variant == "":
		return errors.New("give --variant (the variant to plan; the others are shown beside it)")
	case f.Validate && f.Against != "":
		return errors.New("give --validate (run the point now) or --against (a run already made), not both")
	case f.Clients < 0:
		return fmt.Errorf("--clients %d: want how many clients the plan is for, 1 or more", f.Clients)
	}
	if _, err := runner.ParseBackend(f.Backend, true); err != nil {
		return err
	}
	for i, k := range planKinds() {
		for _, name := range k.only {
			if i != mine && fl.Changed(name) {
				return fmt.Errorf("--%s is %s's (--workload %s), not --workload %s's", name, k.what, strings.Join(k.names, ", "), f.Workload)
			}
		}
	}
	for _, name := range []string{"duration", "warmup"} {
		if f.Failover() && fl.Changed(name) {
			return fmt.Errorf("--%s: a failover's --validate runs --failovers leader crashes (each bounded by the workload's step timeout) after its first election, not a duration", name)
		}
	}
	if !f.Validate {
		for _, name := range append(validateOnly, "failovers") {
			if fl.Changed(name) {
				return fmt.Errorf("--%s is read only with --validate (running the point)", name)
			}
		}
	}
	return nil
}

// AskedFailover is the election the flags set in fl ask about, or which
// flag is wrong.
func (f *Plan) AskedFailover(fl *pflag.FlagSet) (analysis.FailoverAsk, error) {
	if err := f.check(fl); err != nil {
		return analysis.FailoverAsk{}, err
	}
	switch {
	case f.SessionTimeout <= 0:
		return analysis.FailoverAsk{}, errors.New("give --session-timeout, the candidates' session timeout (ZooKeeper) or lease TTL (etcd), e.g. 4s")
	case f.Tick < 0:
		return analysis.FailoverAsk{}, fmt.Errorf("--tick %v: must be positive", f.Tick)
	case f.Validate && f.Failovers < 1:
		return analysis.FailoverAsk{}, fmt.Errorf("--failovers %d: at least 1", f.Failovers)
	}
	q, bound, err := analysis.ParseTarget(f.Target)
	if err != nil {
		return analysis.FailoverAsk{}, err
	}
	ask := analysis.FailoverAsk{Workload: f.Workload, Backend: backends.Kind(f.Backend), Variant: f.Variant, Candidates: f.Clients,
		Timeout: f.SessionTimeout, Tick: f.Tick, TickFrom: analysis.TickGiven}
	if fl.Changed("target") { // the default is a lock's; a failover's is the operator's to give
		ask.Percentile, ask.Bound = q, bound
	}
	local := zkcluster.TimingFor(f.SessionTimeout)
	switch {
	case f.Tick == 0:
		ask.Tick, ask.MaxSession = local.Tick, local.MaxSession
		ask.TickFrom = fmt.Sprintf("as zkbench's local clusters set it for a %v session, an eighth of it from 100 ms to 2 s; give --tick for your ensemble's tickTime", f.SessionTimeout)
		ask.TickFor = func(t time.Duration) time.Duration { return zkcluster.TimingFor(t).Tick }
	case f.Validate && len(f.Endpoints) == 0 && f.Tick != local.Tick && f.Backend != string(backends.Etcd):
		return analysis.FailoverAsk{}, fmt.Errorf("--tick %v: the ZooKeeper servers --validate starts for a %v session run at a tick of %v; drop --tick, or give --endpoints of your ensemble", f.Tick, f.SessionTimeout, local.Tick)
	}
	return ask, nil
}

// AskedFanOut is the config center the flags set in fl ask about, or which
// flag is wrong.
func (f *Plan) AskedFanOut(fl *pflag.FlagSet) (analysis.ConfigAsk, error) {
	if err := f.check(fl); err != nil {
		return analysis.ConfigAsk{}, err
	}
	if f.Size == "" {
		return analysis.ConfigAsk{}, errors.New("give --size, the config's bytes (512, 64KB, 1MB)")
	}
	size, err := workloads.ParseSize(f.Size)
	if err != nil {
		return analysis.ConfigAsk{}, fmt.Errorf("--size %q: %w", f.Size, err)
	}
	q, bound, err := analysis.ParseTarget(f.Target)
	if err != nil {
		return analysis.ConfigAsk{}, err
	}
	return analysis.ConfigAsk{Workload: f.Workload, Backend: backends.Kind(f.Backend), Variant: f.Variant, Watchers: f.Clients,
		Size: size, Rate: f.Rate, Percentile: q, Bound: bound}, nil
}

// Asked is the workload the flags set in fl ask about, its service drawn
// from --service-from's run when given, or which flag is wrong.
func (f *Plan) Asked(fl *pflag.FlagSet) (analysis.Workload, error) {
	if err := f.check(fl); err != nil {
		return analysis.Workload{}, err
	}
	switch {
	case f.Clients < 1:
		return analysis.Workload{}, errors.New("give --clients, the number of workers sharing the lock")
	case f.Every > 0 && f.Think > 0:
		return analysis.Workload{}, errors.New("give --every (a period per worker) or --think (a pause after each release), not both")
	}
	q, bound, err := analysis.ParseTarget(f.Target)
	if err != nil {
		return analysis.Workload{}, err
	}
	w := analysis.Workload{Workload: f.Workload, Backend: backends.Kind(f.Backend), Variant: f.Variant, Clients: f.Clients,
		Every: f.Every, Think: f.Think, Hold: f.Hold, Percentile: q, Bound: bound, Seed: f.Seed}
	if f.ServiceFrom != "" {
		rs, err := results.ReadPaths([]string{f.ServiceFrom})
		if err != nil {
			return analysis.Workload{}, err
		}
		w.ServiceFrom = rs[0]
	}
	return w, nil
}

// Point is the validation run --validate asks for.
func (f *Plan) Point() runner.PlanPoint {
	return runner.PlanPoint{Duration: f.Duration, Warmup: f.Warmup, Output: f.Output, RunID: f.RunID,
		Mode: runner.ClusterMode(f.Cluster), Endpoints: f.Endpoints, RequireQuiet: f.RequireQuiet, Failovers: f.Failovers}
}
