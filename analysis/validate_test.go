package analysis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

// A validation run measured on a loaded machine, or client-bound, gives
// its latencies without an error (they measure the machine or the load
// generator) and says so; its counts are still compared.
func TestValidateLoadedGivesNoLatencyError(t *testing.T) {
	sweep, err := results.ReadFile(testresults.Path("lock-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{Workload: "lock", Variant: "fair", Clients: testresults.LockClients[0], Every: 100 * time.Millisecond, Hold: time.Millisecond,
		Percentile: 99, Bound: time.Second, Acquisitions: 10_000}
	a, err := Predict([]*results.Run{sweep}, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, why, says string
		mark            func(*results.Result)
	}{
		{"quiet", "", "", func(*results.Result) {}},
		{"loaded", "loaded machine", "other processes shared the machine", func(r *results.Result) {
			r.Loaded = &results.Loaded{OthersShare: 0.6, Detail: "other processes took 60% of 2 cores"}
		}},
		{"client-bound", "client-bound", "was client-bound", func(r *results.Result) {
			r.ClientBound = &results.ClientBound{Detail: "cpu (97% of 2 cores)"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := *sweep
			run.ID = "validation-" + tc.name
			run.Config.Rate, run.Config.Hold = w.Rate(), w.Hold
			run.Results = nil
			for _, r := range sweep.Results {
				if r.Variant == w.Variant && r.Clients == w.Clients {
					tc.mark(&r)
					run.Results = append(run.Results, r)
				}
			}
			v, err := Validate(a.Asked, &run)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := v.Write(&out); err != nil {
				t.Fatal(err)
			}
			var waits, counts int
			for _, c := range v.Checks {
				switch {
				case strings.HasPrefix(c.Figure, "wait"):
					waits++
					if got := !math.IsNaN(c.Error); got != (tc.why == "") || c.NotCompared != tc.why {
						t.Errorf("%s: error %v, not compared %q; want an error only on a quiet machine, %q", c.Figure, c.Error, c.NotCompared, tc.why)
					}
				case c.Figure == "acquisitions/s":
					counts++
					if math.IsNaN(c.Error) || c.NotCompared != "" {
						t.Errorf("%s: error %v, not compared %q; want it compared", c.Figure, c.Error, c.NotCompared)
					}
				}
			}
			if waits != 2 || counts != 1 {
				t.Fatalf("%d wait and %d rate checks, want 2 and 1:\n%s", waits, counts, out.String())
			}
			if got := strings.Contains(out.String(), "CANNOT VALIDATE LATENCY HERE"); got != (tc.why != "") || !strings.Contains(out.String(), tc.says) {
				t.Errorf("output, want %q said only when not quiet:\n%s", tc.says, out.String())
			}
			if tc.why != "" && !strings.Contains(out.String(), "not compared ("+tc.why+")") {
				t.Errorf("output lacks the not-compared mark:\n%s", out.String())
			}
			// A figure with no error is null in JSON (NaN is no JSON number).
			js, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("JSON: %v", err)
			}
			if got := strings.Contains(string(js), `"error":null`); got != (tc.why != "") {
				t.Errorf("JSON %s: want a null error only where a figure is not compared", js)
			}
		})
	}
}
