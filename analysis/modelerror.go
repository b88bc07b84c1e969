package analysis

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// MaxPlanUtilisation is the highest model utilisation of the lock at
// which the kept grid's points count in the model's measured error
// (modelerror.md): above it a lock is near saturation, where waits are
// as long as the run.
const MaxPlanUtilisation = 0.80

// The ways of predicting whose error modelerror.md keeps.
const (
	ModeSweep   = "sweep"   // the closed-loop sweep alone
	ModeIdle    = "idle"    // with one-client open-loop runs at the rate
	ModeService = "service" // with --service-from
)

// modelErrorText is modelerror.md: the model's error on the kept
// validation grid, written by `make docs` from the kept plan checks.
//
//go:embed modelerror.md
var modelErrorText string

// ModelError is the model's measured error on the kept grid for one way
// of predicting: over Points points, the lowest and highest error
// (predicted / measured − 1) of the wait p50 and p99.
type ModelError struct {
	Mode     string     `json:"mode"`
	Points   int        `json:"points"`
	P50, P99 [2]float64 `json:"-"`
}

// KeptModelError is the kept grid's error for mode; false when the grid
// holds none (modelerror.md has no row for it).
func KeptModelError(mode string) (ModelError, bool) {
	for _, line := range strings.Split(modelErrorText, "\n") {
		c := strings.Split(strings.Trim(line, "| "), " | ")
		if len(c) < 4 || c[0] != mode {
			continue
		}
		n, err := strconv.Atoi(c[1])
		p50, ok50 := errorSpan(c[2])
		p99, ok99 := errorSpan(c[3])
		if err != nil || !ok50 || !ok99 {
			return ModelError{}, false
		}
		return ModelError{Mode: mode, Points: n, P50: p50, P99: p99}, true
	}
	return ModelError{}, false
}

// errorSpan reads "-22% to +25%".
func errorSpan(s string) ([2]float64, bool) {
	lo, hi, ok := strings.Cut(s, " to ")
	a, aerr := strconv.ParseFloat(strings.TrimSuffix(lo, "%"), 64)
	b, berr := strconv.ParseFloat(strings.TrimSuffix(hi, "%"), 64)
	return [2]float64{a / 100, b / 100}, ok && aerr == nil && berr == nil
}

// Mode is the way p was predicted: ModeSweep, ModeIdle or ModeService.
func (p *Prediction) Mode() string { return p.mode() }

// mode is the way p was predicted.
func (p *Prediction) mode() string {
	switch {
	case p.Workload.ServiceFrom != nil:
		return ModeService
	case p.Idle != nil:
		return ModeIdle
	}
	return ModeSweep
}

// errorLine is the plan's line on its own measured error.
func (p *Prediction) errorLine() string {
	switch {
	case p.Overloaded:
		return "model error: not measured for an overloaded lock (its waits grow with the load's length)\n"
	case p.Sim != nil && p.Sim.Utilisation > MaxPlanUtilisation:
		return fmt.Sprintf("model error: not measured above %.0f%% utilisation of the lock (this plan: %s); the kept grid's points there are in docs/results.md\n",
			100*MaxPlanUtilisation, pctStr(p.Sim.Utilisation))
	}
	return ModelErrorLine(p.mode())
}

// ModelErrorLine is what a plan made in mode prints of the kept grid's
// error at or below MaxPlanUtilisation.
func ModelErrorLine(mode string) string {
	e, ok := KeptModelError(mode)
	if !ok {
		return fmt.Sprintf("model error: not measured for this way of predicting (%s) on the kept validation grid\n", mode)
	}
	what, where := "waits were", fmt.Sprintf(" at or below %.0f%% utilisation", 100*MaxPlanUtilisation)
	switch mode {
	case ModeConfig:
		what, where = "propagation to the last watcher was", where+" of the fan-out"
	case ModeFailover:
		what, where = "failovers were", ", the leader's process dying"
	}
	return fmt.Sprintf("model error: predicting this way (%s), the model's %s p50 %+.0f%% to %+.0f%%, p99 %+.0f%% to %+.0f%% off the measured at the %d points of the kept validation grid"+
		"%s (analysis/modelerror.md; every point in docs/results.md)\n",
		e.Mode, what, 100*e.P50[0], 100*e.P50[1], 100*e.P99[0], 100*e.P99[1], e.Points, where)
}
