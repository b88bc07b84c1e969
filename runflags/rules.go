package runflags

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// The rules of `zkbench run`'s flags that are not a Config's: which flags
// a run reads, the workloads' parameter flags, and the lists flags give.
// A flag a run would not read is refused, not ignored: a silently ignored
// flag makes a benchmark measure something other than what its user asked
// for.

// paramFlag is one parameter flag: the workloads' parameter of one key
// (workloads.Spec.Params: a parameter several workloads declare is one
// flag), with the workloads that declare it, in the order of
// workloads.Specs.
type paramFlag struct {
	Param     workloads.Param
	Workloads []string
	// Helps are "<workloads>: <help>", one per distinct help.
	Helps []string
	// Defaults are "<workload> <default>", one a workload.
	Defaults []string
}

// paramFlags are the parameter flags of every workload.
func paramFlags() []*paramFlag {
	var out []*paramFlag
	type said struct {
		help  string
		names []string
	}
	helps := map[string][]*said{}
	for _, s := range workloads.Specs() {
		for _, p := range s.Params {
			i := slices.IndexFunc(out, func(d *paramFlag) bool { return d.Param.Key == p.Key })
			if i < 0 {
				out = append(out, &paramFlag{Param: p})
				i = len(out) - 1
			}
			d := out[i]
			d.Workloads = append(d.Workloads, s.Name)
			d.Defaults = append(d.Defaults, s.Name+" "+p.Default)
			j := slices.IndexFunc(helps[p.Key], func(h *said) bool { return h.help == p.Help })
			if j < 0 {
				helps[p.Key] = append(helps[p.Key], &said{help: p.Help})
				j = len(helps[p.Key]) - 1
			}
			helps[p.Key][j].names = append(helps[p.Key][j].names, s.Name)
		}
	}
	for _, d := range out {
		for _, h := range helps[d.Param.Key] {
			d.Helps = append(d.Helps, strings.Join(h.names, ", ")+": "+h.help)
		}
	}
	return out
}

// Usage is the flag's help: its helps, the variants and choices it
// takes; def is its default, "" when the workloads' defaults differ (the
// usage then lists them).
func (d *paramFlag) Usage() (usage, def string) {
	usage = strings.Join(d.Helps, "; ")
	if len(d.Param.Variants) > 0 {
		usage += " (variant " + strings.Join(d.Param.Variants, ", ") + ")"
	}
	if len(d.Param.Choices) > 0 {
		usage += " (" + strings.Join(d.Param.Choices, " or ") + ")"
	}
	def = d.Param.Default
	for _, other := range d.Defaults {
		if !strings.HasSuffix(other, " "+def) {
			return usage + " (default " + strings.Join(d.Defaults, ", ") + ")", ""
		}
	}
	return usage, def
}

// Check refuses value for a run of workload spec and variants: a
// parameter the workload does not read, that none of the variants reads,
// or a value of the wrong type.
func (d *paramFlag) Check(spec workloads.Spec, variants []string, value string) error {
	flag := d.Param.Flag()
	p, ok := spec.Param(d.Param.Key)
	if !ok {
		return fmt.Errorf("--%s: the %s workload does not read it (%s)", flag, spec.Name, workloads.WhoDoes(d.Workloads))
	}
	if len(p.Variants) > 0 && !slices.ContainsFunc(variants, func(v string) bool { return slices.Contains(p.Variants, v) }) {
		return fmt.Errorf("--%s: only the %s variant reads it (add --variants %s)", flag, strings.Join(p.Variants, ", "), p.Variants[0])
	}
	if _, err := p.Parse(value); err != nil {
		if p.Type == workloads.ParamChoice {
			return fmt.Errorf("--%s %q: %w", flag, value, err)
		}
		return fmt.Errorf("--%s %s: %w", flag, value, err)
	}
	return nil
}

// knobFlags are the run-wide flags only some workloads read.
var knobFlags = []workloads.Knob{workloads.KnobHold, workloads.KnobThink, workloads.KnobRate, workloads.KnobWarmup}

// backendFlags are the flags only one backend reads.
var backendFlags = map[string]backends.Kind{
	"session-timeout": backends.ZooKeeper, "digest": backends.ZooKeeper,
	"lease-ttl": backends.Etcd, "cacert": backends.Etcd, "cert": backends.Etcd, "key": backends.Etcd,
	"tls-server-name": backends.Etcd, "insecure-skip-tls-verify": backends.Etcd,
	"user": backends.Etcd, "password": backends.Etcd, "grpc-window": backends.Etcd,
	// kube job's: etcd's password and TLS files as Secrets in the pods.
	"password-secret": backends.Etcd, "tls-secret": backends.Etcd,
}

// flagsGiven are the flags a user set, as checkFlagsRead judges them.
type flagsGiven struct {
	// Changed are the names of the flags set, in the order given.
	Changed []string
	// Backend is --backend; Preset is --preset; Endpoints says
	// --endpoints was given.
	Backend   string
	Preset    string
	Endpoints bool
}

// checkFlagsRead refuses a flag the user set that this run would not
// read: another backend's, a knob or a preset the workload does not read,
// --scale without --preset, --nodes with --endpoints, --clients with a
// preset. spec is the run's workload, nil for a command that runs none
// (zkbench exec).
func checkFlagsRead(given flagsGiven, spec *workloads.Spec) error {
	changed := func(name string) bool { return slices.Contains(given.Changed, name) }
	for _, name := range given.Changed {
		if k, ok := backendFlags[name]; ok && string(k) != given.Backend {
			return fmt.Errorf("--%s: only %s reads it, and this run's backend is %s", name, k, given.Backend)
		}
	}
	// A client certificate without its key, or a key alone, would fail
	// only at the first connection, after the servers started.
	for _, pair := range [][2]string{{"cert", "key"}, {"key", "cert"}} {
		if changed(pair[0]) && !changed(pair[1]) {
			return fmt.Errorf("--%s without --%s: give the client's certificate and its key, or neither", pair[0], pair[1])
		}
	}
	if spec != nil {
		for _, k := range knobFlags {
			if changed(string(k)) && !spec.Reads(k) {
				return fmt.Errorf("--%s: the %s workload does not read it (%s)", k, spec.Name, workloads.ReadersOf(k))
			}
		}
		if changed("preset") && !slices.Contains(spec.Abilities.Presets, given.Preset) {
			var owners []string
			for _, s := range workloads.Specs() {
				if len(s.Abilities.Presets) > 0 {
					owners = append(owners, s.Name)
				}
			}
			return fmt.Errorf("--preset: the %s workload does not read it (%s)", spec.Name, workloads.WhoDoes(owners))
		}
	}
	switch {
	case changed("scale") && given.Preset == "":
		return fmt.Errorf("--scale: it scales a --preset's grid; give --preset %s", workloads.PresetPaperBarrier)
	case changed("nodes") && given.Endpoints:
		return errors.New("--nodes: zkbench starts no servers with --endpoints; your cluster has the members it has")
	case changed("clients") && given.Preset != "":
		return fmt.Errorf("--clients: --preset %s sets the client counts of its grid (use --scale)", given.Preset)
	}
	return nil
}

// parseClients reads --clients: whole numbers from 1 to runner.MaxClients,
// comma-separated, each once.
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
		if n > runner.MaxClients {
			return nil, fmt.Errorf("--clients: %d is more than zkbench runs from one machine (at most %d)", n, runner.MaxClients)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--clients: give at least one client count, e.g. 10,100,1000")
	}
	return out, nil
}

// parseFaults checks the --fault flags and returns them as a Spec holds
// them, one a fault.
func parseFaults(specs []string) ([]string, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	fs, err := schedule.ParseAll(specs)
	if err != nil {
		return nil, fmt.Errorf("--fault: %w\n(grammar: ACTION[:ARG]@AT[+FOR]; see zkbench run --help)", err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out, nil
}

// parsePIDs reads --server-pids: endpoint=pid,...
func parsePIDs(s string) (map[string]int, error) {
	pids := map[string]int{}
	for _, part := range splitList(s) {
		ep, v, ok := strings.Cut(part, "=")
		pid, err := strconv.Atoi(v)
		if !ok || ep == "" || err != nil || pid <= 0 {
			return nil, fmt.Errorf("--server-pids: %q: want endpoint=pid", part)
		}
		pids[ep] = pid
	}
	return pids, nil
}

// splitList splits a comma-separated flag, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// autoDuration is a duration flag that also takes "auto" (runner.Auto): the run
// chooses the value (from its client counts, or its workload).
type autoDuration time.Duration

// byteSize is a flag of bytes written as --size is (512, 64KB, 1MB).
type byteSize int

func (b *byteSize) String() string {
	if *b == 0 {
		return "0"
	}
	return figures.FormatSize(int(*b))
}

// Set reads a size such as 64KB or 1MB (KB = 1024 bytes), or 0.
func (b *byteSize) Set(s string) error {
	v, err := figures.ParseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

func (*byteSize) Type() string { return "size" }

func (d *autoDuration) String() string {
	if time.Duration(*d) == runner.Auto {
		return "auto"
	}
	return time.Duration(*d).String()
}

// Set reads "auto" or a duration that is not negative.
func (d *autoDuration) Set(s string) error {
	if s == "auto" {
		*d = autoDuration(runner.Auto)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New(`want a duration such as 500ms or 10s, or "auto"`)
	}
	if v < 0 {
		return errors.New("must not be negative")
	}
	*d = autoDuration(v)
	return nil
}

// Type names the flag's values in help texts.
func (d *autoDuration) Type() string { return "duration|auto" }

// holdUsage names each workload's own hold in a closed loop, as --hold
// auto takes it (Spec.DefaultHold).
func holdUsage() string {
	var parts []string
	for _, s := range workloads.Specs() {
		if s.DefaultHold > 0 {
			parts = append(parts, fmt.Sprintf("%s %v", s.Name, s.DefaultHold))
		}
	}
	return strings.Join(parts, ", ")
}

// variantsUsage lists every workload's variants for --variants' help, its
// defaults first when they are not all of them: "lock: naive, fair (also
// naive-children, native); ...".
func variantsUsage() string {
	var parts []string
	for _, s := range workloads.Specs() {
		var all []string
		for _, v := range s.Variants {
			all = append(all, v.Name)
		}
		if s.Defaults == nil {
			parts = append(parts, s.Name+": "+strings.Join(all, ", "))
			continue
		}
		rest := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(s.Defaults, n) })
		parts = append(parts, fmt.Sprintf("%s: %s (also %s)", s.Name, strings.Join(s.Defaults, ", "), strings.Join(rest, ", ")))
	}
	return strings.Join(parts, "; ")
}
