package analysis

import (
	"math"
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

// Jain's index is shown against a perfect round-robin of the same grants:
// strict turns give 1 at any N, whatever the raw index.
func TestJainAgainstRoundRobin(t *testing.T) {
	for _, tc := range []struct {
		grants  int64
		clients int
		want    float64
	}{
		{10, 10, 1}, {20, 10, 1}, {5, 10, 0.5}, {8031, 5000, 0.9153}, {0, 10, 0}, {3, 2, 0.9},
	} {
		if got := JainRoundRobin(tc.grants, tc.clients); math.Abs(got-tc.want) > 5e-5 {
			t.Errorf("JainRoundRobin(%d, %d) = %.5f, want %.4f", tc.grants, tc.clients, got, tc.want)
		}
	}
	// 8,031 grants over 5,000 clients in strict turn: 3,031 clients had two.
	per := make([]int64, 5000)
	for i := range per {
		per[i] = 1
		if i < 3031 {
			per[i] = 2
		}
	}
	turns := results.Result{Clients: 5000, Elapsed: time.Minute, Ops: results.Ops{Issued: 8031, Succeeded: 8031},
		Fairness: results.Fairness{Jain: results.JainIndex(per)}}
	if j, ok := jainMeaningful(&turns); !ok || j != 1 {
		t.Errorf("strict turns (raw %.4f): shown %.4f, %v; want 1", turns.Fairness.Jain, j, ok)
	}
	// One client in ten had every grant it could: far from even.
	per = make([]int64, 5000)
	for i := 0; i < len(per); i += 10 {
		per[i] = 16
	}
	skewed := turns
	skewed.Ops = results.Ops{Issued: 8000, Succeeded: 8000}
	skewed.Fairness.Jain = results.JainIndex(per)
	if j, ok := jainMeaningful(&skewed); !ok || j > 0.11 {
		t.Errorf("a tenth of the clients had every grant: shown %.4f, %v; want about 0.1", j, ok)
	}
}
