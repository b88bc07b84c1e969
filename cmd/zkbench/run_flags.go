package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/backends"
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

// paramDeclaration is one parameter flag: the workloads' parameter of one
// key, with the workloads that declare it, in the order of
// workloads.Specs.
type paramDeclaration struct {
	param     workloads.Param
	workloads []string
	helps     []string // "<workloads>: <help>", one per distinct help
	defaults  []string // "<workload> <default>"
}

func paramDeclarations() []*paramDeclaration {
	var out []*paramDeclaration
	type said struct {
		help  string
		names []string
	}
	helps := map[string][]*said{}
	for _, s := range workloads.Specs() {
		for _, p := range s.Params {
			i := slices.IndexFunc(out, func(d *paramDeclaration) bool { return d.param.Key == p.Key })
			if i < 0 {
				out = append(out, &paramDeclaration{param: p})
				i = len(out) - 1
			}
			d := out[i]
			d.workloads = append(d.workloads, s.Name)
			d.defaults = append(d.defaults, s.Name+" "+p.Default)
			j := slices.IndexFunc(helps[p.Key], func(h *said) bool { return h.help == p.Help })
			if j < 0 {
				helps[p.Key] = append(helps[p.Key], &said{help: p.Help})
				j = len(helps[p.Key]) - 1
			}
			helps[p.Key][j].names = append(helps[p.Key][j].names, s.Name)
		}
	}
	for _, d := range out {
		for _, h := range helps[d.param.Key] {
			d.helps = append(d.helps, strings.Join(h.names, ", ")+": "+h.help)
		}
	}
	return out
}

func addRecipeFlags(fl *pflag.FlagSet, f *recipeFlags) {
	f.values = map[string]*paramValue{}
	for _, d := range paramDeclarations() {
		v := &paramValue{p: d.param}
		usage := strings.Join(d.helps, "; ")
		if len(d.param.Variants) > 0 {
			usage += " (variant " + strings.Join(d.param.Variants, ", ") + ")"
		}
		if len(d.param.Choices) > 0 {
			usage += " (" + strings.Join(d.param.Choices, " or ") + ")"
		}
		def := d.param.Default
		for _, other := range d.defaults {
			if !strings.HasSuffix(other, " "+def) {
				usage += " (default " + strings.Join(d.defaults, ", ") + ")"
				def = ""
				break
			}
		}
		v.val = def
		fl.Var(v, d.param.Flag(), usage)
		f.values[d.param.Key] = v
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
	for _, d := range paramDeclarations() {
		flag := d.param.Flag()
		if !fl.Changed(flag) {
			continue
		}
		p, ok := spec.Param(d.param.Key)
		if !ok {
			return nil, fmt.Errorf("--%s: the %s workload does not read it (%s)", flag, spec.Name, onlyWho(d.workloads))
		}
		if len(p.Variants) > 0 && !slices.ContainsFunc(variants, func(v string) bool { return slices.Contains(p.Variants, v) }) {
			return nil, fmt.Errorf("--%s: only the %s variant reads it (add --variants %s)", flag, strings.Join(p.Variants, ", "), p.Variants[0])
		}
		v := f.values[d.param.Key].val
		if _, err := p.Parse(v); err != nil {
			if p.Type == workloads.ParamChoice {
				return nil, fmt.Errorf("--%s %q: %w", flag, v, err)
			}
			return nil, fmt.Errorf("--%s %s: %w", flag, v, err)
		}
		out[d.param.Key] = v
	}
	return out, nil
}

// onlyWho is "only the lock workload does" or "only the failover,
// observers workloads do".
func onlyWho(names []string) string {
	if len(names) == 1 {
		return "only the " + names[0] + " workload does"
	}
	return "only the " + strings.Join(names, ", ") + " workloads do"
}

// knobFlags are the run-wide flags only some workloads read.
var knobFlags = []workloads.Knob{workloads.KnobHold, workloads.KnobThink, workloads.KnobRate, workloads.KnobWarmup}

// backendFlags are the flags only one backend reads.
var backendFlags = map[string]backends.Kind{
	"session-timeout": backends.ZooKeeper, "digest": backends.ZooKeeper,
	"lease-ttl": backends.Etcd, "cacert": backends.Etcd, "cert": backends.Etcd, "key": backends.Etcd,
	"tls-server-name": backends.Etcd, "insecure-skip-tls-verify": backends.Etcd,
	"user": backends.Etcd, "password": backends.Etcd,
}

// checkFlagsRead refuses a flag the user set that this run would not read:
// a silently ignored flag makes a benchmark measure something other than
// what its user asked for. spec is the run's workload, nil for a command
// that runs none (zkbench exec).
func checkFlagsRead(fl *pflag.FlagSet, f *runFlags, spec *workloads.Spec) error {
	var errs []error
	fl.Visit(func(flag *pflag.Flag) {
		if k, ok := backendFlags[flag.Name]; ok && string(k) != f.backend {
			errs = append(errs, fmt.Errorf("--%s: only %s reads it, and this run's backend is %s", flag.Name, k, f.backend))
		}
	})
	if len(errs) > 0 {
		return errs[0]
	}
	if spec != nil {
		for _, k := range knobFlags {
			if fl.Changed(string(k)) && !spec.Reads(k) {
				var readers []string
				for _, s := range workloads.Specs() {
					if s.Reads(k) {
						readers = append(readers, s.Name)
					}
				}
				return fmt.Errorf("--%s: the %s workload does not read it (%s)", k, spec.Name, onlyWho(readers))
			}
		}
	}
	if spec != nil && fl.Changed("preset") && !slices.Contains(spec.Abilities.Presets, f.recipe.preset) {
		var owners []string
		for _, s := range workloads.Specs() {
			if len(s.Abilities.Presets) > 0 {
				owners = append(owners, s.Name)
			}
		}
		return fmt.Errorf("--preset: the %s workload does not read it (%s)", spec.Name, onlyWho(owners))
	}
	switch {
	case fl.Changed("scale") && f.recipe.preset == "":
		return fmt.Errorf("--scale: it scales a --preset's grid; give --preset %s", workloads.PresetPaperBarrier)
	case fl.Changed("nodes") && len(f.endpoints) > 0:
		return errors.New("--nodes: zkbench starts no servers with --endpoints; your cluster has the members it has")
	case fl.Changed("clients") && f.recipe.preset != "":
		return fmt.Errorf("--clients: --preset %s sets the client counts of its grid (use --scale)", f.recipe.preset)
	}
	return nil
}
