package workloads

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
)

// Spec declares a workload: everything the command line, the runner, the
// figures, the analysis and the report know of it. Each workload's file
// holds its Spec; Specs lists them all, and nothing else names a workload.
type Spec struct {
	// Name is the workload's name on the command line and in results.
	Name string
	// Summary says what one operation is, for help texts.
	Summary string
	// Unit is the operation Ops and the per-operation figures count.
	Unit figures.Unit
	// Variants are every variant, in sweep order (herd-prone first).
	Variants []VariantSpec
	// Defaults are the variants a run without --variants runs, in order;
	// nil: every variant the backend runs.
	Defaults []string
	// Latencies are the histograms the workload records, the one that
	// stands for a case first.
	Latencies []figures.Latency
	// Params are the workload's own parameters (results.Config.Params),
	// each set by the command-line flag of its name.
	Params []Param
	// Knobs are the run-wide settings (Config.Hold, Think, Rate, Warmup)
	// the workload reads; a run that sets another is refused.
	Knobs []Knob
	// DefaultRate is the open loop's rate (Config.Rate) of a run that sets
	// none; 0: such a run is a closed loop.
	DefaultRate float64
	// DefaultHold is what a closed-loop run whose hold is Auto holds the
	// lock for (Config.Hold); 0: such a run does not hold it.
	DefaultHold time.Duration
	// Abilities are what the runner may do with the workload's cases.
	Abilities Abilities
	// New returns the workload's driver.
	New func() Workload
}

// VariantSpec is one variant a workload runs.
type VariantSpec struct {
	Name  string
	Class figures.Class
	// Backends the variant runs on; nil: every backend. Why says what
	// keeps it off the others.
	Backends []backends.Kind
	Why      error
}

// Supports reports whether v runs on backend k.
func (v VariantSpec) Supports(k backends.Kind) bool {
	return v.Backends == nil || slices.Contains(v.Backends, k)
}

// Knob is a run-wide setting a workload reads.
type Knob string

// The knobs.
const (
	KnobHold   Knob = "hold"   // Config.Hold: time an operation holds what it got
	KnobThink  Knob = "think"  // Config.Think: a closed loop's pause between operations
	KnobRate   Knob = "rate"   // Config.Rate: an open loop's operations per second
	KnobWarmup Knob = "warmup" // Config.Warmup: an unrecorded start of each case
)

// Abilities are what the runner may do with a workload's cases beyond
// running them.
type Abilities struct {
	// Shards: a case's clients may be split over processes that run it
	// together (zkbench run --shards, Kubernetes pods).
	Shards bool
	// ClientProcesses: clients may run in worker processes of their own,
	// so that a fault can pause one (pause-client).
	ClientProcesses bool
	// Presets are the named grids of cases the workload runs (--preset).
	Presets []string
	// Planned: zkbench plan models the workload (one lock, FIFO waiters)
	// from its sweeps.
	Planned bool
	// PlannedFanOut: zkbench plan models the workload as one writer's
	// updates fanned out to watchers (a config center) from its sweeps.
	PlannedFanOut bool
	// PlannedFailover: zkbench plan models the workload as a leader's
	// failover after its process died, from its sweeps (kill close).
	PlannedFailover bool
	// Steps: a holder's critical section is work in steps that a
	// kill-holder fault can fall between (the ledger).
	Steps bool
}

// PlannedFanOut lists the workloads zkbench plan models as a fan-out.
func PlannedFanOut() []string { return specsWith(func(a Abilities) bool { return a.PlannedFanOut }) }

// PlannedFailover lists the workloads zkbench plan models as a failover.
func PlannedFailover() []string {
	return specsWith(func(a Abilities) bool { return a.PlannedFailover })
}

// specsWith names the workloads whose abilities has says yes to.
func specsWith(has func(Abilities) bool) []string {
	var out []string
	for _, s := range Specs() {
		if has(s.Abilities) {
			out = append(out, s.Name)
		}
	}
	return out
}

// Planned lists the workloads zkbench plan models as a lock.
func Planned() []string { return specsWith(func(a Abilities) bool { return a.Planned }) }

// Specs lists every workload, by name.
func Specs() []Spec {
	return []Spec{
		barrierSpec(), configSpec(), failoverSpec(), handoffSpec(), ledgerSpec(), lockSpec(), membershipSpec(),
		observersSpec(), queueSpec(), revokeSpec(), rwlockSpec(), semaphoreSpec(), simpleBarrierSpec(), twoPhaseSpec(),
	}
}

// Names lists the workloads' names, sorted.
func Names() []string {
	var out []string
	for _, s := range Specs() {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// Lookup returns the workload called name, or an error wrapping
// ErrUnknownWorkload that lists the known ones.
func Lookup(name string) (Spec, error) {
	for _, s := range Specs() {
		if s.Name == name {
			return s, nil
		}
	}
	return Spec{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownWorkload, name, strings.Join(Names(), ", "))
}

// New returns the driver of the workload called name (see Lookup).
func New(name string) (Workload, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return s.New(), nil
}

// VariantNames lists the variants that run on backend k, in sweep order.
func (s Spec) VariantNames(k backends.Kind) []string {
	var out []string
	for _, v := range s.Variants {
		if v.Supports(k) {
			out = append(out, v.Name)
		}
	}
	return out
}

// DefaultVariants are the variants a run on k runs without --variants.
func (s Spec) DefaultVariants(k backends.Kind) []string {
	if s.Defaults == nil {
		return s.VariantNames(k)
	}
	return slices.DeleteFunc(slices.Clone(s.Defaults), func(n string) bool {
		v, ok := s.Variant(n)
		return !ok || !v.Supports(k)
	})
}

// Variant returns the variant called name.
func (s Spec) Variant(name string) (VariantSpec, bool) {
	i := slices.IndexFunc(s.Variants, func(v VariantSpec) bool { return v.Name == name })
	if i < 0 {
		return VariantSpec{}, false
	}
	return s.Variants[i], true
}

// CheckVariants refuses a variant the workload does not have, or that does
// not run on k, saying which it has.
func (s Spec) CheckVariants(k backends.Kind, names []string) error {
	for _, n := range names {
		v, ok := s.Variant(n)
		switch {
		case !ok:
			var all []string
			for _, v := range s.Variants {
				all = append(all, v.Name)
			}
			return fmt.Errorf("%w %q of the %s workload (it has %s)", ErrUnknownVariant, n, s.Name, strings.Join(all, ", "))
		case !v.Supports(k):
			if v.Why == nil {
				return fmt.Errorf("%w %q of the %s workload on %s: it runs on %s only", ErrUnknownVariant, n, s.Name, k, joinKinds(v.Backends))
			}
			return fmt.Errorf("%w %q of the %s workload on %s: %w", ErrUnknownVariant, n, s.Name, k, v.Why)
		}
	}
	return nil
}

func joinKinds(ks []backends.Kind) string {
	var out []string
	for _, k := range ks {
		out = append(out, string(k))
	}
	return strings.Join(out, ", ")
}

// Reads reports whether the workload reads knob k.
func (s Spec) Reads(k Knob) bool { return slices.Contains(s.Knobs, k) }

// Declare stamps res with the workload's declarations: unit, the
// variant's class and the latency order (results read them back).
func (s Spec) Declare(res *results.Result) {
	res.Workload, res.Unit, res.Latencies = s.Name, s.Unit, s.Latencies
	if v, ok := s.Variant(res.Variant); ok {
		res.Class = v.Class
	}
}

// Param is one workload parameter: a key of results.Config.Params, set on
// the command line by the flag of the same name (--<key>, with - for _).
type Param struct {
	Key  string
	Type ParamType
	// Default is the value when none is given, as the flag would take it.
	Default string
	// Help says what the parameter does (the flag's help).
	Help string
	// Choices are the values a ParamChoice takes (the first is not
	// implied as the default).
	Choices []string
	// Variants, if set, are the only variants that read the parameter.
	Variants []string
}

// Flag is the parameter's command-line flag name.
func (p Param) Flag() string { return strings.ReplaceAll(p.Key, "_", "-") }

// ParamType is how a parameter's value is read and checked.
type ParamType int

// Parameter types.
const (
	// ParamDuration: a non-negative duration ("100ms").
	ParamDuration ParamType = iota
	// ParamPause: a positive duration.
	ParamPause
	// ParamCount: a whole number of at least 1.
	ParamCount
	// ParamShare: a fraction from 0 to 1.
	ParamShare
	// ParamPerSecond: a rate above 0.
	ParamPerSecond
	// ParamChoice: one of Param.Choices.
	ParamChoice
	// ParamBytes: a size in bytes ("512", "64KB", "1MB"; KB = 1024),
	// stored as the number of bytes.
	ParamBytes
)

// TypeName names the type in help texts (pflag's Value.Type).
func (t ParamType) TypeName() string {
	switch t {
	case ParamDuration, ParamPause:
		return "duration"
	case ParamCount:
		return "int"
	case ParamShare, ParamPerSecond:
		return "float"
	case ParamBytes:
		return "size"
	}
	return "string"
}

// Normalize checks v and returns it as results files store it; an error
// wraps ErrBadCase and names the parameter.
func (p Param) Normalize(v string) (string, error) {
	n, err := p.Parse(v)
	if err != nil {
		return "", fmt.Errorf("%w: parameter %s=%q: %w", ErrBadCase, p.Key, v, err)
	}
	return n, nil
}

// Parse checks v as the parameter's type wants it and returns it as results
// files store it; the error says what it wants.
func (p Param) Parse(v string) (string, error) {
	switch p.Type {
	case ParamDuration, ParamPause:
		d, err := time.ParseDuration(v)
		switch {
		case p.Type == ParamPause && (err != nil || d <= 0):
			return "", errors.New("want a positive pause such as 50ms")
		case err != nil || d < 0:
			return "", errors.New("want a non-negative duration such as 100ms")
		}
		return d.String(), nil
	case ParamCount:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", errors.New("want a whole number of at least 1")
		}
		return strconv.Itoa(n), nil
	case ParamShare:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return "", errors.New("want a share from 0 to 1, such as 0.9")
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case ParamPerSecond:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return "", errors.New("want a rate above 0 per second")
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case ParamChoice:
		if !slices.Contains(p.Choices, v) {
			return "", fmt.Errorf("want %s", strings.Join(p.Choices, " or "))
		}
		return v, nil
	case ParamBytes:
		n, err := ParseSize(v)
		if err != nil {
			return "", err
		}
		return strconv.Itoa(n), nil
	}
	return v, nil
}

// Param returns the parameter with key.
func (s Spec) Param(key string) (Param, bool) {
	i := slices.IndexFunc(s.Params, func(p Param) bool { return p.Key == key })
	if i < 0 {
		return Param{}, false
	}
	return s.Params[i], true
}

// ErrUndeclared: a workload read a parameter its Spec does not declare.
var ErrUndeclared = errors.New("workloads: parameter not declared")

// value is cfg's value of parameter key, normalised, or its default.
func (s Spec) value(cfg results.Config, key string) (Param, string, error) {
	p, ok := s.Param(key)
	if !ok {
		return p, "", fmt.Errorf("%w: %s has no parameter %q", ErrUndeclared, s.Name, key)
	}
	v, given := cfg.Params[key]
	if !given || v == "" {
		v = p.Default
	}
	n, err := p.Normalize(v)
	return p, n, err
}

// Duration reads a duration parameter (ParamDuration, ParamPause).
func (s Spec) Duration(cfg results.Config, key string) (time.Duration, error) {
	_, v, err := s.value(cfg, key)
	if err != nil {
		return 0, err
	}
	return time.ParseDuration(v)
}

// Int reads a whole-number parameter (ParamCount, ParamBytes).
func (s Spec) Int(cfg results.Config, key string) (int, error) {
	_, v, err := s.value(cfg, key)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// Float reads a numeric parameter (ParamShare, ParamPerSecond).
func (s Spec) Float(cfg results.Config, key string) (float64, error) {
	_, v, err := s.value(cfg, key)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(v, 64)
}

// String reads a ParamChoice parameter.
func (s Spec) String(cfg results.Config, key string) (string, error) {
	_, v, err := s.value(cfg, key)
	return v, err
}

// OpsOr is the case's operation bound: --ops when given, else the count
// parameter key (the rounds of a barrier, the failovers of an election).
func (s Spec) OpsOr(cfg results.Config, key string) (int, error) {
	if cfg.Ops > 0 {
		return int(cfg.Ops), nil
	}
	return s.Int(cfg, key)
}

// ParamsFor returns the parameters of a run of the workload: every declared
// one at its default or as given (normalised), and an error for a given key
// it does not declare.
func (s Spec) ParamsFor(given map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k := range given {
		if _, ok := s.Param(k); !ok {
			return nil, fmt.Errorf("%w: the %s workload has no parameter %q", ErrBadCase, s.Name, k)
		}
	}
	for _, p := range s.Params {
		v, ok := given[p.Key]
		if !ok {
			v = p.Default
		}
		n, err := p.Normalize(v)
		if err != nil {
			return nil, err
		}
		out[p.Key] = n
	}
	return out, nil
}

// fromFamily returns vs, each with the backends its recipe family says it
// runs on.
func fromFamily[T any](f variants.Family[T], vs ...VariantSpec) []VariantSpec {
	for i := range vs {
		if v, err := f.Lookup(vs[i].Name); err == nil {
			vs[i].Backends = v.Backends
		}
	}
	return vs
}

// ReadersOf says which workloads read knob k, as WhoDoes.
func ReadersOf(k Knob) string {
	var names []string
	for _, s := range Specs() {
		if s.Reads(k) {
			names = append(names, s.Name)
		}
	}
	return WhoDoes(names)
}

// WhoDoes is "only the lock workload does" or "only the lock, queue
// workloads do".
func WhoDoes(names []string) string {
	switch len(names) {
	case 0:
		return "no workload does"
	case 1:
		return "only the " + names[0] + " workload does"
	}
	return "only the " + strings.Join(names, ", ") + " workloads do"
}
