package analysis

import (
	"strings"
	"testing"
)

// The kept grid's error (modelerror.md, written by make docs) is read for
// each way of predicting the grid holds, and a plan prints its own.
func TestKeptModelError(t *testing.T) {
	for _, mode := range []string{ModeSweep, ModeIdle, ModeService} {
		e, ok := KeptModelError(mode)
		if !ok || e.Points == 0 || e.P50[0] > e.P50[1] || e.P99[0] > e.P99[1] {
			t.Errorf("%s: %+v, %v; want a row with points and ordered spans", mode, e, ok)
		}
	}
	if _, ok := KeptModelError("nope"); ok {
		t.Error("a row for an unknown mode")
	}
	if s, ok := errorSpan("-22% to +25%"); !ok || s != [2]float64{-0.22, 0.25} {
		t.Errorf("errorSpan: %v %v", s, ok)
	}
	p := &Prediction{Sim: &QueueResult{Utilisation: 0.5}}
	if l := p.errorLine(); !strings.Contains(l, "model error: predicting this way (sweep)") || !strings.Contains(l, "points of the kept validation grid") {
		t.Errorf("error line: %q", l)
	}
	// Where the grid measured no error, the plan says so instead.
	p.Sim.Utilisation = 0.9
	if l := p.errorLine(); !strings.Contains(l, "not measured above 80% utilisation") {
		t.Errorf("at 90%%: %q", l)
	}
	p.Overloaded = true
	if l := p.errorLine(); !strings.Contains(l, "not measured for an overloaded lock") {
		t.Errorf("overloaded: %q", l)
	}
}
