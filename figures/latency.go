package figures

import (
	"cmp"
	"slices"
)

// primaryLatencies rank the latency histograms (results.Result.Latency)
// that stand for a case: the unit operation's own latency first. Other
// histograms a workload records ("round", "observe", "lost_notice", ...)
// follow by name.
var primaryLatencies = []string{"acquire", "failover", "handoff", "enter", "leave", "release",
	"propagate", "delivery"}

// SortLatencyNames sorts histogram names primary first: "acquire",
// "failover", "handoff", "enter", "leave", "release", then the rest by name.
func SortLatencyNames(names []string) {
	rank := func(s string) int {
		if i := slices.Index(primaryLatencies, s); i >= 0 {
			return i
		}
		return len(primaryLatencies)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
}

// PrimaryLatency is the first of names in SortLatencyNames order, "" if
// names is empty. names is not changed.
func PrimaryLatency(names []string) string {
	if len(names) == 0 {
		return ""
	}
	s := slices.Clone(names)
	SortLatencyNames(s)
	return s[0]
}
