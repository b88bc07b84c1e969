package backends

import (
	"context"
	"time"
)

// MemberScraper is a Scraper that can also read each member on its own, so
// that a reader comparing two scrapes can tell a member that did not answer,
// or restarted and began its counters again, from one that did little.
// Found by type assertion, like Scraper.
type MemberScraper interface {
	Scraper
	// ScrapeMembers reads every member in parallel under ctx and returns
	// one entry per member, sorted by endpoint; a member that did not
	// answer has Err set. The error is for a scrape that could not start
	// (no member known), not for one member's failure.
	ScrapeMembers(ctx context.Context) ([]MemberMetrics, error)
}

// MemberMetrics is one member's answer to a scrape.
type MemberMetrics struct {
	// Endpoint is the member's client address, host:port.
	Endpoint string
	// Metrics are this member's counters alone, under raw and canonical
	// names; nil when Err is set.
	Metrics Metrics
	Err     error
	// Started is when the member's process started, as it reports it
	// (etcd process_start_time_seconds); zero if unknown. A later Started
	// than at an earlier scrape means it restarted: every counter began
	// again from zero.
	Started time.Time
	// StatsStarted is when the counters named in Restartable began
	// counting, for a server that restarts some counters without
	// restarting its process (ZooKeeper re-creates its server, and with it
	// the request statistics behind zk_packets_received, at every leader
	// election); zero if there are none.
	StatsStarted time.Time
	// StatsStartedEarliest, if set, is the earliest StatsStarted can be:
	// a start derived from an uptime lies between the scrape's send less
	// the uptime and its reply less the uptime (StatsStarted), and a
	// loaded server may take seconds to answer. A restart of the
	// statistics is known only when a later scrape's earliest start is
	// after an earlier scrape's latest.
	StatsStartedEarliest time.Time
	Restartable          []string
}

// SumMembers adds up the members that answered, under every name they
// report. Canonical names sum like raw ones: each is a sum over members,
// but for the Replicated ones, which every member counts for the whole
// ensemble: those are the largest member's.
func SumMembers(members []MemberMetrics) Metrics {
	m := Metrics{}
	for _, mm := range members {
		if mm.Err != nil {
			continue
		}
		for k, v := range mm.Metrics {
			if Replicated[k] {
				m[k] = max(m[k], v)
				continue
			}
			m[k] += v
		}
	}
	return m
}

// Replicated are the canonical counters every member of an ensemble keeps
// for every write the ensemble applies, not for its own clients' requests:
// ZooKeeper's per-namespace write count is kept where a transaction is
// applied, on each member (measured on a 3-member 3.8 ensemble: each
// member counted the clients' writes once, their sum three times).
var Replicated = map[string]bool{MetricNamespaceWrites: true}
