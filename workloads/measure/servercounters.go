package measure

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
)

// restartSlack is how much later a member's reported start may be at the
// second scrape without counting as a restart: ZooKeeper's start is derived
// from its uptime, which moves with the scrape's own latency.
const restartSlack = time.Second

// restartCounters are the canonical counters that never go down while a
// member runs: one that did is a restart nobody dated.
var restartCounters = []string{
	backends.MetricWatchEvents, backends.MetricWatchesTriggeredOnDelete,
	backends.MetricWrites, backends.MetricReads, backends.MetricRequests,
}

// fillPartial compares before and after member by member. When every member
// answered both scrapes and none restarted in between it leaves res alone
// and returns false: the plain sums are right. Otherwise it sets res.Server
// to the sum of the deltas of the members that ran through the case (less
// the counters a member started again without restarting, such as a
// ZooKeeper server's request statistics after a leader election), marks
// res.ServerPartial, says in a note which member did what, and returns true.
// Either way no gauge (isGauge) becomes a difference.
func fillPartial(res *results.Result, before, after Snapshot, isGauge func(string) bool) bool {
	if before.Members == nil && after.Members == nil {
		return false
	}
	b, a := byEndpoint(before.Members), byEndpoint(after.Members)
	endpoints := endpointsOf(b, a)

	sum := backends.Metrics{}
	var problems []string
	compared := 0
	for _, ep := range endpoints {
		bm, bok := b[ep]
		am, aok := a[ep]
		pb, pa := before.PIDs[ep], after.PIDs[ep]
		switch {
		case pb != 0 && pa != 0 && pb != pa:
			// A restart is the fact that matters, whether or not the new
			// process answered yet: a JVM restarted late in a case on a
			// loaded machine may still be starting at the last scrape.
			p := fmt.Sprintf("%s restarted (process %d, then %d)", ep, pb, pa)
			if !aok || am.Err != nil {
				p += " and did not answer at the end"
			}
			problems = append(problems, p)
			continue
		case !bok || bm.Err != nil:
			problems = append(problems, fmt.Sprintf("%s did not answer at the start", ep))
			continue
		case !aok || am.Err != nil:
			problems = append(problems, fmt.Sprintf("%s did not answer at the end", ep))
			continue
		case pb != pa:
			problems = append(problems, fmt.Sprintf("%s restarted (process %d, then %d)", ep, pb, pa))
			continue
		case later(am.Started, bm.Started):
			problems = append(problems, fmt.Sprintf("%s restarted (its process started again %v into the case)",
				ep, am.Started.Sub(before.At).Round(time.Millisecond)))
			continue
		}
		d := am.Metrics.CounterDelta(bm.Metrics, isGauge)
		var statsNote string
		if later(cmp.Or(am.StatsStartedEarliest, am.StatsStarted), bm.StatsStarted) && len(am.Restartable) > 0 {
			for _, k := range am.Restartable {
				delete(d, k)
			}
			statsNote = fmt.Sprintf("%s's request statistics started again %v into the case (a ZooKeeper server re-created after a leader election): its %s left out",
				ep, am.StatsStarted.Sub(before.At).Round(time.Millisecond), describeNames(am.Restartable))
		}
		if k := slices.IndexFunc(restartCounters, func(k string) bool { return d[k] < 0 }); k >= 0 {
			problems = append(problems, fmt.Sprintf("%s's %s went down by %.0f: it restarted", ep, restartCounters[k], -d[restartCounters[k]]))
			continue
		}
		if statsNote != "" {
			problems = append(problems, statsNote)
		}
		for k, v := range d {
			sum[k] += v
		}
		compared++
	}
	if len(problems) == 0 {
		return false
	}
	if compared == 0 {
		res.Server = nil
		res.Notes = append(res.Notes, fmt.Sprintf("server counters not measured: no member ran through the case: %s", strings.Join(problems, "; ")))
		return true
	}
	res.Server = sum
	res.ServerPartial = true
	res.Notes = append(res.Notes, fmt.Sprintf(
		"server counters are partial (%d of %d members ran through the case): %s; server figures are not divided per operation nor compared with the clients'",
		compared, len(endpoints), strings.Join(problems, "; ")))
	return true
}

// later reports whether t is known and later than before by more than
// restartSlack.
func later(t, before time.Time) bool {
	return !t.IsZero() && !before.IsZero() && t.After(before.Add(restartSlack))
}

func byEndpoint(ms []backends.MemberMetrics) map[string]backends.MemberMetrics {
	out := make(map[string]backends.MemberMetrics, len(ms))
	for _, m := range ms {
		out[hostPort(m.Endpoint)] = m
	}
	return out
}

// changedServers says which local servers were not the same process at
// both edges of the case ("" if all were).
func changedServers(before, after map[string]int) string {
	eps := endpointsOf(before, after)
	var out []string
	for _, ep := range eps {
		pb, pa := before[ep], after[ep]
		switch {
		case pb == pa:
		case pb == 0:
			out = append(out, fmt.Sprintf("server %s was not running at the start", ep))
		case pa == 0:
			out = append(out, fmt.Sprintf("server %s was not running at the end (process %d gone)", ep, pb))
		default:
			out = append(out, fmt.Sprintf("server %s restarted during the case (process %d, then %d)", ep, pb, pa))
		}
	}
	return strings.Join(out, "; ")
}

// byHostPort re-keys endpoints by host:port, dropping a URL scheme.
func byHostPort(pids map[string]int) map[string]int {
	out := make(map[string]int, len(pids))
	for ep, pid := range pids {
		out[hostPort(ep)] = pid
	}
	return out
}

func hostPort(ep string) string {
	if u, err := url.Parse(ep); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Host
	}
	return ep
}

// describeNames names the canonical figures among names and counts the
// server's raw ones.
func describeNames(names []string) string {
	var canonical []string
	for _, n := range names {
		if strings.HasPrefix(n, "zkbench_") {
			canonical = append(canonical, n)
		}
	}
	raw := len(names) - len(canonical)
	switch {
	case raw == 0:
		return strings.Join(canonical, ", ")
	case len(canonical) == 0:
		return fmt.Sprintf("%d server figures (%s, ...)", raw, names[0])
	}
	return fmt.Sprintf("%s and %d raw server figures", strings.Join(canonical, ", "), raw)
}

// endpointsOf is every endpoint of before or after, sorted.
func endpointsOf[V any](before, after map[string]V) []string {
	eps := slices.Collect(maps.Keys(before))
	for ep := range after {
		if _, ok := before[ep]; !ok {
			eps = append(eps, ep)
		}
	}
	slices.Sort(eps)
	return eps
}
