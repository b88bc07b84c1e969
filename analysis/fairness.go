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

// JainRoundRobin is Jain's index of grants spread over clients as evenly
// as they go: each client grants/clients or one more. It is below 1
// whenever clients do not divide grants (8,031 grants over 5,000 clients:
// 0.9153), so a raw index near it says nothing about fairness.
func JainRoundRobin(grants int64, clients int) float64 {
	if grants <= 0 || clients <= 0 {
		return 0
	}
	n := int64(clients)
	q, r := float64(grants/n), float64(grants%n)
	g := float64(grants)
	return g * g / (float64(n) * (r*(q+1)*(q+1) + (float64(n)-r)*q*q))
}

// jainMeaningful is r's Jain index against a perfect round-robin of its
// grants (Fairness.Jain / JainRoundRobin, at most 1: 1 is as even as the
// grants allow), when it was measured and is meaningful.
func jainMeaningful(r *results.Result) (float64, bool) {
	rr := JainRoundRobin(r.Ops.Succeeded, r.Clients)
	if r.Fairness.Jain == 0 || rr == 0 || JainUnmeaningful(r) != "" {
		return 0, false
	}
	// The per-client counts and Ops.Succeeded are taken at the same
	// edges; min guards the last digit.
	return min(1, r.Fairness.Jain/rr), true
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

// Loaded is the first repeat of c measured on a loaded machine
// (results.Result.Loaded), nil if none was.
func (c *Case) Loaded() *results.Loaded {
	for _, r := range c.Results {
		if r.Loaded != nil {
			return r.Loaded
		}
	}
	return nil
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
