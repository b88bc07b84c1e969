package results

import (
	"slices"
	"testing"

	"github.com/zkbench/zkbench/figures"
)

// TestLegacyDeclarations: a result that records no unit, class or latency
// order (files written before they were recorded) reads as its names meant
// then, and upgrade records that.
func TestLegacyDeclarations(t *testing.T) {
	for w, want := range map[string]figures.Unit{
		"lock": figures.Acquisition, "failover": figures.Failover, "election-failover": figures.Failover,
		"handoff": figures.Handoff, "election-handoff": figures.Handoff, "observers": figures.Term,
		"election-observers": figures.Term, "barrier": figures.Round, "double-barrier": figures.Round,
		"queue": figures.Item, "twophase": figures.Transaction, "membership": figures.Change, "bogus": figures.Operation,
	} {
		if got := (&Result{Workload: w}).UnitOf(); got != want {
			t.Errorf("unit of %q = %q, want %q", w, got, want)
		}
	}
	for v, want := range map[string]figures.Class{
		"naive": figures.Naive, "naive-children": figures.Naive, "fair": figures.HerdFree, "native": figures.Baseline,
		"curator": figures.Baseline, "x": figures.Other, "polling": figures.Other,
	} {
		if got := (&Result{Variant: v}).ClassOf(); got != want {
			t.Errorf("class of %q = %q, want %q", v, got, want)
		}
	}
	h := &Histogram{}
	r := &Result{Workload: "barrier", Variant: "naive", Latency: map[figures.Latency]*Histogram{
		"zeta": h, "leave": h, "handoff": h, "acquire": h, "enter": h, "round": h}}
	want := []figures.Latency{"acquire", "handoff", "enter", "leave", "round", "zeta"}
	if got := r.LatencyNames(); !slices.Equal(got, want) {
		t.Errorf("latency order %v, want %v", got, want)
	}
	upgrade(r)
	if r.Unit != figures.Round || r.Class != figures.Naive || !slices.Equal(r.Latencies, []figures.Latency{"acquire", "handoff", "enter", "leave"}) {
		t.Errorf("upgraded: unit %q class %q latencies %v", r.Unit, r.Class, r.Latencies)
	}
	if got := r.LatencyNames(); !slices.Equal(got, want) {
		t.Errorf("latency order after upgrade %v, want %v", got, want)
	}
	// A result that records its own declarations keeps them.
	own := &Result{Workload: "lock", Variant: "naive", Unit: "permit", Class: figures.Other, Latencies: []figures.Latency{"zeta"},
		Latency: map[figures.Latency]*Histogram{"zeta": h, "acquire": h}}
	upgrade(own)
	if own.Unit != "permit" || own.Class != figures.Other || !slices.Equal(own.LatencyNames(), []figures.Latency{"zeta", "acquire"}) {
		t.Errorf("recorded declarations changed: %+v", own)
	}
}
