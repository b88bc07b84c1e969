package analysis

import (
	"fmt"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// JainUnmeaningful says why r's Jain index over per-client grants is not
// meaningful, or "" when it is (or was not measured: Jain 0). Jain's index
// is 1 when every client had the same number of turns, so it only speaks of
// fairness over a window in which every client could have had one: at
// least as many successful operations as clients, and a measured interval
// of at least clients × the mean handoff gap (the least time each turn
// takes, where a handoff histogram was recorded). A 5,000-client lock case
// of 10 s that granted 2,000 times has an index of at most 0.4 however
// fairly it granted.
func JainUnmeaningful(r *results.Result) string {
	if r.Fairness.Jain == 0 || r.Clients <= 1 {
		return ""
	}
	if r.Ops.Succeeded < int64(r.Clients) {
		return fmt.Sprintf("Jain's index not meaningful: %d successful operations for %d clients, so not every client could get a turn",
			r.Ops.Succeeded, r.Clients)
	}
	if h := r.Latency[figures.LatencyHandoff]; h != nil && h.Count > 0 && r.Elapsed > 0 {
		if need := time.Duration(h.Mean * float64(r.Clients)); need > r.Elapsed {
			return fmt.Sprintf("Jain's index not meaningful: the measured %s is shorter than %d clients × the mean handoff %s (%s)",
				results.FormatDuration(r.Elapsed), r.Clients, results.FormatDuration(time.Duration(h.Mean)), results.FormatDuration(need))
		}
	}
	return ""
}

// jainMeaningful is r's Jain index when it was measured and is meaningful.
func jainMeaningful(r *results.Result) (float64, bool) {
	if r.Fairness.Jain == 0 || JainUnmeaningful(r) != "" {
		return 0, false
	}
	return r.Fairness.Jain, true
}

// Jain is the mean of the repeats' Jain indices, false if any repeat's is
// not measured or not meaningful (JainUnmeaningful).
func (c *Case) Jain() (float64, bool) {
	var sum float64
	for _, r := range c.Results {
		j, ok := jainMeaningful(r)
		if !ok {
			return 0, false
		}
		sum += j
	}
	if len(c.Results) == 0 {
		return 0, false
	}
	return sum / float64(len(c.Results)), true
}

// ClientBound is the first repeat of c marked client-bound
// (results.Result.ClientBound), nil if none was.
func (c *Case) ClientBound() *results.ClientBound {
	for _, r := range c.Results {
		if r.ClientBound != nil {
			return r.ClientBound
		}
	}
	return nil
}
