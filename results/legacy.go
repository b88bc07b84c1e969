package results

import (
	"strings"

	"github.com/zkbench/zkbench/figures"
)

// What results files written before a result recorded its own unit, herd
// class and latency order (Result.Unit, Class, Latencies) meant by their
// workload and variant names. These tables are history: they describe the
// names such files hold and never grow. A workload added since records its
// declaration in every result it writes.

// legacyUnits are the units of the workloads such files name, under every
// name they were written with.
var legacyUnits = map[string]figures.Unit{
	"lock": figures.Acquisition, "rwlock": figures.Acquisition,
	"failover": figures.Failover, "election-failover": figures.Failover,
	"handoff": figures.Handoff, "election-handoff": figures.Handoff,
	"observers": figures.Term, "election-observers": figures.Term, "election": figures.Term,
	"barrier": figures.Round, "double-barrier": figures.Round, "simple-barrier": figures.Round,
	"config":     figures.Update,
	"revoke":     figures.Revocation,
	"twophase":   figures.Transaction,
	"membership": figures.Change,
	"queue":      figures.Item,
}

// legacyPrimary is the order in which such files' latencies were ranked:
// the first one recorded stood for the case; the rest followed by name.
var legacyPrimary = []figures.Latency{figures.LatencyAcquire, figures.LatencyFailover, figures.LatencyHandoff,
	figures.LatencyEnter, figures.LatencyLeave, figures.LatencyRelease, figures.LatencyPropagate, figures.LatencyDelivery}

// legacyClass is how such files' variants were classed: by their names.
func legacyClass(variant string) figures.Class {
	v := strings.ToLower(variant)
	switch {
	case strings.Contains(v, "naive") || strings.Contains(v, "herd-prone"):
		return figures.Naive
	case strings.Contains(v, "fair") || strings.Contains(v, "herd-free") || strings.Contains(v, "herdfree") ||
		strings.Contains(v, "queue") || strings.Contains(v, "sequential"):
		return figures.HerdFree
	case strings.Contains(v, "native") || strings.Contains(v, "baseline") || strings.Contains(v, "curator") ||
		strings.Contains(v, "zk-lock") || strings.Contains(v, "zklock") || strings.Contains(v, "mutex") ||
		strings.Contains(v, "concurrency"):
		return figures.Baseline
	}
	return figures.Other
}

// upgradeDeclarations gives a result from an older file the unit, class and
// latency order its names meant then, so that a file it is written to again
// records them.
func upgradeDeclarations(res *Result) {
	res.Unit, res.Class = res.UnitOf(), res.ClassOf()
	if res.Latencies == nil {
		for _, l := range legacyPrimary {
			if res.Latency[l] != nil {
				res.Latencies = append(res.Latencies, l)
			}
		}
	}
}
