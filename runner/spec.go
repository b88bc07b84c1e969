package runner

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/results"
)

// Spec is a whole run as data: its Config and every option that is not a
// writer, a command or a process's environment. It encodes as JSON (the
// servers' passwords left out: PasswordEnv, DigestEnv), so that the shards
// of a run on this machine, the pods of a Kubernetes Job and zkbench plan
// --validate run from the description a plain run is made from, not from
// a command line rebuilt from flags.
type Spec struct {
	Config Config `json:"config"`
	RunID  string `json:"run_id,omitempty"`
	// Output is the folder of <run-id>/results.json ("": no file).
	Output    string   `json:"output,omitempty"`
	Faults    []string `json:"faults,omitempty"`
	Preset    string   `json:"preset,omitempty"`
	Scale     float64  `json:"scale,omitempty"`
	Calibrate bool     `json:"calibrate,omitempty"`
	// RequireQuiet: WithQuietMachine.
	RequireQuiet bool `json:"require_quiet,omitempty"`
	// Shard makes the run one shard of a run several processes share.
	Shard *SpecShard `json:"shard,omitempty"`
	// ServerPIDs are the processes of the endpoints' servers on this
	// machine (WithServerProcesses).
	ServerPIDs map[string]int `json:"server_pids,omitempty"`
}

// SpecShard is shard Index of Count, each wait at a case's barrier bounded
// by Timeout (0: DefaultShardTimeout).
type SpecShard struct {
	Index   int           `json:"index"`
	Count   int           `json:"count"`
	Timeout time.Duration `json:"timeout_ns,omitempty"`
}

// Options are the options s describes.
func (s Spec) Options() ([]Option, error) {
	fs, err := schedule.ParseAll(s.Faults)
	if err != nil {
		return nil, fmt.Errorf("--fault: %w", err)
	}
	opts := []Option{WithRunID(s.RunID), WithOutput(s.Output), WithFaults(fs...)}
	if s.Preset != "" {
		opts = append(opts, WithPreset(s.Preset, s.Scale))
	}
	if s.Calibrate {
		opts = append(opts, WithCalibration())
	}
	if s.RequireQuiet {
		opts = append(opts, WithQuietMachine())
	}
	if s.Shard != nil {
		opts = append(opts, WithShard(s.Shard.Index, s.Shard.Count, s.Shard.Timeout))
	}
	if len(s.ServerPIDs) > 0 {
		opts = append(opts, WithServerProcesses(s.ServerPIDs))
	}
	return opts, nil
}

// NewFromSpec is New(s.Config, s's options..., extra...).
func NewFromSpec(s Spec, extra ...Option) (*Runner, error) {
	opts, err := s.Options()
	if err != nil {
		return nil, err
	}
	return New(s.Config, append(opts, extra...)...)
}

// ReadSpec decodes a Spec, refusing fields it does not know (a spec
// written by another zkbench version must fail loudly, not run something
// else).
func ReadSpec(r io.Reader) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("run spec: %w", err)
	}
	return s, nil
}

// Spec is the run's own description: its Config as given (not yet filled
// with defaults) and its options' data.
func (r *Runner) Spec() Spec { return r.plan.spec() }

func (p *plan) spec() Spec {
	s := Spec{Config: p.given, RunID: p.runID, Output: p.output, Calibrate: p.calibrate, RequireQuiet: p.requireQuiet, ServerPIDs: p.serverPIDs}
	if p.preset != "" {
		s.Preset, s.Scale = p.preset, p.scale
	}
	for _, f := range p.faults {
		s.Faults = append(s.Faults, f.String())
	}
	if p.shard != nil && !p.shard.parent() {
		s.Shard = &SpecShard{Index: p.shard.index, Count: p.shard.count, Timeout: p.shard.timeout}
	}
	return s
}

// Case is one case of a run, in the order the run runs them.
type Case struct {
	// ID names the case's namespace (/zkbench/<run-id>/<id>).
	ID      string
	Variant string
	Clients int
	Repeat  int
	// Ops is the case's own operation bound where a preset sets one (0: the
	// run's).
	Ops int64
	// Warmup and Duration bound the case as the run settles them (an Auto
	// warm-up made concrete).
	Warmup, Duration time.Duration
}

// Cases lists the run's cases: the sweep, or a preset's grid.
func (r *Runner) Cases() []Case {
	var out []Case
	for _, c := range r.plan.cases() {
		out = append(out, Case{ID: c.id, Variant: c.variant, Clients: c.clients, Repeat: c.repeat, Ops: c.ops,
			Warmup: r.plan.cfg.Warmup, Duration: r.plan.cfg.Duration})
	}
	return out
}

// CaseBounds are the time bounds of the run's cases, one a case of
// Cases: its warm-up and duration (a preset's cell runs at least
// presetMinDuration). A Job's deadline adds them up (kube.Deadline).
func (r *Runner) CaseBounds() []time.Duration {
	var out []time.Duration
	for _, c := range r.Cases() {
		out = append(out, c.Warmup+c.Duration)
	}
	return out
}

// MaxShardClients is the most clients this process runs in one case: the
// largest case's (a preset's grid included), or, for one shard of a
// sharded run, the largest shard's share of it.
func (r *Runner) MaxShardClients() int { return r.plan.maxProcessClients() }

func (p *plan) maxProcessClients() int {
	clients := slices.Max(p.cfg.Clients)
	if s := p.shard; s != nil && !s.parent() {
		_, clients = results.ShareOf(clients, s.count-1, s.count) // the last shard's share is the largest
	}
	return clients
}
