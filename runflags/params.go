package runflags

import (
	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/workloads"
)

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

func (f *recipeFlags) bind(fl *pflag.FlagSet) {
	f.values = map[string]*paramValue{}
	for _, d := range paramFlags() {
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
	for _, d := range paramFlags() {
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
