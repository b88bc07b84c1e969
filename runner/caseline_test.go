package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
)

// A case's line says how many were still waiting at the end (not errors),
// the client's CPU, and marks a client-bound case with its reasons.
func TestCaseLineMarksClientBound(t *testing.T) {
	res := results.Result{Elapsed: time.Second, Ops: results.Ops{Issued: 1099, Succeeded: 100, StillWaiting: 999},
		Throughput: 100, StoppedBy: results.StoppedByDuration, Load: &results.Load{Cores: 1, CPUFraction: 0.98}}
	res.ClientBound = res.Load.Bound()
	line := caseLine(&res)
	for _, want := range []string{"999 still waiting at the end", "client cpu 98% of 1 cores", "CLIENT-BOUND: cpu (98% of 1 cores)"} {
		if !strings.Contains(line, want) {
			t.Errorf("case line %q lacks %q", line, want)
		}
	}
	res.Load.CPUFraction, res.ClientBound = 0.3, nil
	if line := caseLine(&res); strings.Contains(line, "CLIENT-BOUND") {
		t.Errorf("case line %q marks a case that was not client-bound", line)
	}
}
