package runflags

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
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
	Target                     string
	Seed                       uint64
	JSON                       bool
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

// BindPlan declares plan's flags on fl.
func BindPlan(fl *pflag.FlagSet) *Plan {
	f := &Plan{}
	fl.StringVar(&f.Workload, "workload", workloads.Planned()[0], "workload to plan ("+strings.Join(workloads.Planned(), ", ")+")")
	fl.StringVar(&f.Backend, "backend", "", "backend (needed when the results hold more than one)")
	fl.StringVar(&f.Variant, "variant", "", "variant to plan (naive, fair, native...); every other variant is shown beside it")
	fl.IntVar(&f.Clients, "clients", 0, "workers (clients) sharing the lock")
	fl.DurationVar(&f.Every, "every", 0, "each worker needs the lock once per this period (open loop)")
	fl.DurationVar(&f.Think, "think", 0, "each worker asks again this long after its release (finite source)")
	fl.DurationVar(&f.Hold, "hold", 0, "how long each worker holds the lock")
	fl.StringVar(&f.Target, "target", "p99=50ms", "latency target: pQ=BOUND, the wait at percentile Q at most BOUND")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the simulation")
	fl.BoolVar(&f.JSON, "json", false, "print the answer as JSON")
	fl.BoolVar(&f.Validate, "validate", false, "run the predicted point and print predicted against measured")
	fl.DurationVar(&f.Duration, "duration", 15*time.Second, "with --validate: measured time of the run")
	fl.DurationVar(&f.Warmup, "warmup", 2*time.Second, "with --validate: unrecorded warm-up of the run")
	fl.StringVarP(&f.Output, "output", "o", runner.DefaultOutput, "with --validate: folder for the run's results"+runner.OutputHelp)
	fl.StringVar(&f.RunID, "run-id", "", "with --validate: run id (default: plan-<variant>-<clients>-<time>)")
	fl.StringVar(&f.Cluster, "cluster", "", "with --validate: servers to start (embedded, local, docker); default: the basis run's")
	fl.StringSliceVar(&f.Endpoints, "endpoints", nil, "with --validate: servers of a running cluster instead")
	fl.BoolVar(&f.RequireQuiet, "require-quiet", false, requireQuietHelp)
	fl.StringVar(&f.ServiceFrom, "service-from", "", "draw every acquire's service from the handoffs of this run (a results file or run folder; open loop allowed) instead of the sweep's: a run at the workload's own duty cycle")
	fl.StringVar(&f.Against, "against", "", "print predicted against measured for a run already made (a results file or run folder) instead of running one")
	return f
}

// Asked is the workload the flags set in fl ask about, its service drawn
// from --service-from's run when given, or which flag is wrong.
func (f *Plan) Asked(fl *pflag.FlagSet) (analysis.Workload, error) {
	switch {
	case f.Variant == "":
		return analysis.Workload{}, errors.New("give --variant (the variant to plan; the others are shown beside it)")
	case f.Clients < 1:
		return analysis.Workload{}, errors.New("give --clients, the number of workers sharing the lock")
	case f.Validate && f.Against != "":
		return analysis.Workload{}, errors.New("give --validate (run the point now) or --against (a run already made), not both")
	case f.Every > 0 && f.Think > 0:
		return analysis.Workload{}, errors.New("give --every (a period per worker) or --think (a pause after each release), not both")
	}
	if !f.Validate {
		for _, name := range validateOnly {
			if fl.Changed(name) {
				return analysis.Workload{}, fmt.Errorf("--%s is read only with --validate (running the point)", name)
			}
		}
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
		Mode: runner.ClusterMode(f.Cluster), Endpoints: f.Endpoints, RequireQuiet: f.RequireQuiet}
}
