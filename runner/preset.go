package runner

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/zkbench/zkbench/workloads"
)

// presetMinDuration bounds each cell of a preset instead of --duration's
// per-case default: a cell runs its barriers to the end.
const presetMinDuration = 30 * time.Minute

// expandPreset replaces the plan's client sweep by the preset's grid.
func (p *plan) expandPreset() error {
	if p.preset == "" {
		return nil
	}
	if p.preset != workloads.PresetPaperBarrier {
		return fmt.Errorf("--preset %q: the only preset is %s", p.preset, workloads.PresetPaperBarrier)
	}
	if !slices.Contains(p.wspec.Abilities.Presets, p.preset) {
		return fmt.Errorf("--preset %s: the %s workload has no such preset (%s runs it: add --workload %s)", p.preset, p.wspec.Name,
			presetOwner(p.preset), presetOwner(p.preset))
	}
	grid, err := workloads.PaperBarrierGrid(p.scale)
	if err != nil {
		return fmt.Errorf("--scale: %w", err)
	}
	p.grid = grid
	p.cfg.Clients = nil
	for _, c := range grid {
		if !slices.Contains(p.cfg.Clients, c.Clients) {
			p.cfg.Clients = append(p.cfg.Clients, c.Clients)
		}
	}
	p.cfg.Duration = max(p.cfg.Duration, presetMinDuration)
	p.cfg.Params["preset"] = p.preset
	p.cfg.Params["scale"] = strconv.FormatFloat(p.scale, 'g', -1, 64)
	return nil
}

// caseSpec is one case of a run: a variant at a client count, one repeat,
// with the case's own operation bound where a preset sets it.
type caseSpec struct {
	id      string // names the case's namespace
	label   string // its progress line
	variant string
	clients int
	repeat  int
	ops     int64 // 0: the run's --ops
}

// cases lists the run's cases in the order they run: client counts in the
// order given (--clients 100,10 runs 100 first) with every variant at each,
// every repeat; or, with a preset, its grid cell by cell.
func (p *plan) cases() []caseSpec {
	var out []caseSpec
	add := func(v string, n, barriers int) {
		for rep := 1; rep <= p.cfg.Repeat; rep++ {
			c := caseSpec{variant: v, clients: n, repeat: rep}
			if barriers > 0 {
				c.id = fmt.Sprintf("%s-%dc-%db-%d", v, n, barriers, rep)
				c.label = fmt.Sprintf("%s %s, %d clients, %d barriers, repeat %d/%d", p.cfg.Workload, v, n, barriers, rep, p.cfg.Repeat)
				c.ops = int64(barriers)
			} else {
				c.id = fmt.Sprintf("%s-%d-%d", v, n, rep)
				c.label = fmt.Sprintf("%s %s, %d clients, repeat %d/%d", p.cfg.Workload, v, n, rep, p.cfg.Repeat)
			}
			out = append(out, c)
		}
	}
	if len(p.grid) > 0 {
		for _, cell := range p.grid {
			for _, v := range p.Variants {
				add(v, cell.Clients, cell.Barriers)
			}
		}
		return out
	}
	for _, n := range p.cfg.Clients {
		for _, v := range p.Variants {
			add(v, n, 0)
		}
	}
	return out
}
