package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// Jain's index is shown only over a window in which every client could
// have had a turn.
func TestJainUnmeaningful(t *testing.T) {
	handoff := func(mean time.Duration) map[figures.Latency]*results.Histogram {
		return map[figures.Latency]*results.Histogram{"handoff": {Unit: "ns", Count: 100, Mean: float64(mean)}}
	}
	for _, tc := range []struct {
		name   string
		res    results.Result
		reason string // "" = meaningful
	}{
		{"fewer grants than clients", results.Result{Clients: 1000, Elapsed: 10 * time.Second,
			Ops: results.Ops{Issued: 1175, Succeeded: 176, StillWaiting: 999}, Fairness: results.Fairness{Jain: 0.1347}},
			"176 successful operations for 1000 clients"},
		{"window shorter than clients × mean handoff", results.Result{Clients: 100, Elapsed: time.Second,
			Ops: results.Ops{Issued: 200, Succeeded: 200}, Fairness: results.Fairness{Jain: 0.9}, Latency: handoff(20 * time.Millisecond)},
			"shorter than 100 clients × the mean handoff 20.0ms (2.00s)"},
		{"every client could have turns", results.Result{Clients: 10, Elapsed: 2 * time.Second,
			Ops: results.Ops{Issued: 1009, Succeeded: 1000, StillWaiting: 9}, Fairness: results.Fairness{Jain: 0.97}, Latency: handoff(time.Millisecond)}, ""},
		{"not measured", results.Result{Clients: 10, Ops: results.Ops{Issued: 5, Succeeded: 5}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JainUnmeaningful(&tc.res)
			if (tc.reason == "") != (got == "") || !strings.Contains(got, tc.reason) {
				t.Fatalf("JainUnmeaningful = %q, want %q", got, tc.reason)
			}
			cell := jain(&tc.res)
			notes := strings.Join(Notes(&tc.res), "\n")
			switch {
			case tc.reason != "" && (cell != unmeasured || !strings.Contains(notes, tc.reason)):
				t.Errorf("summary cell %q, notes %q: want %q and the reason", cell, notes, unmeasured)
			case tc.reason == "" && tc.res.Fairness.Jain > 0 && cell == unmeasured:
				t.Errorf("a meaningful index printed as %q", cell)
			case tc.reason == "" && strings.Contains(notes, "Jain"):
				t.Errorf("notes %q for a meaningful or unmeasured index", notes)
			}
		})
	}
}
