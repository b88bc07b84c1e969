package main

import (
	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// faultHelp is --fault's help text.
const faultHelp = `inject a fault, ACTION[:ARG]@AT[+FOR], AT counted in each case from when every client
has its session (before the warm-up); repeatable, or comma-separated. Actions: kill-server:I, restart-server:I, kill-leader,
kill-servers:N, pause-server:I (+FOR required), latency:BASE[±JITTER], cut-client:C, cut-all,
reset-conns[:C], expire-session:C, pause-client:C (+FOR required; lock workload, closed loop:
client C runs in a worker process that is SIGSTOPped, as in a long GC pause). Servers and
clients count from 0. Examples: kill-leader@10s+5s, latency:50ms±20ms@5s+10s, cut-client:3@5s+8s`

// recipeFlags are the flags of the workloads' own parameters, one a
// parameter key (workloads.Spec.Params: a parameter several workloads
// declare is one flag), and --preset with its --scale.
type recipeFlags struct {
	values map[string]*paramValue
	preset string
	scale  float64
}

// paramValue is one parameter flag: its text as given, checked by the
// parameter's type once the run's workload is known (recipeFlags.params).
type paramValue struct {
	p   workloads.Param
	val string
}

func (v *paramValue) String() string { return v.val }
func (v *paramValue) Type() string   { return v.p.Type.TypeName() }

func (v *paramValue) Set(s string) error {
	v.val = s
	return nil
}

func addRecipeFlags(fl *pflag.FlagSet, f *recipeFlags) {
	f.values = map[string]*paramValue{}
	for _, d := range runner.ParamFlags() {
		usage, def := d.Usage()
		v := &paramValue{p: d.Param, val: def}
		fl.Var(v, d.Param.Flag(), usage)
		f.values[d.Param.Key] = v
	}
	fl.StringVar(&f.preset, "preset", "", "barrier: "+workloads.PresetPaperBarrier+
		" runs the ZooKeeper paper's double barrier grid (50, 100, 200 clients x 200 to 1,600 barriers, times --scale) and prints its table")
	fl.Float64Var(&f.scale, "scale", 0.1, "--preset: fraction of the paper's sizes, 0 < scale <= 1")
}

// params are the parameters given on the command line for the workload
// of spec, by key; the runner fills in the defaults. A parameter flag the
// workload does not read, or that none of the run's variants reads, is
// refused.
func (f *recipeFlags) params(fl *pflag.FlagSet, spec workloads.Spec, variants []string) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range runner.ParamFlags() {
		if !fl.Changed(d.Param.Flag()) {
			continue
		}
		v := f.values[d.Param.Key].val
		if err := d.Check(spec, variants, v); err != nil {
			return nil, err
		}
		out[d.Param.Key] = v
	}
	return out, nil
}

// checkFlagsRead is runner.CheckFlagsRead of the flags the user set.
func checkFlagsRead(fl *pflag.FlagSet, f *runFlags, spec *workloads.Spec) error {
	given := runner.FlagsGiven{Backend: f.backend, Preset: f.recipe.preset, Endpoints: len(f.endpoints) > 0}
	fl.Visit(func(flag *pflag.Flag) { given.Changed = append(given.Changed, flag.Name) })
	return runner.CheckFlagsRead(given, spec)
}
