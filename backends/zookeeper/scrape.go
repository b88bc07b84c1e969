package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/fourlw"
	"github.com/zkbench/zkbench/internal/procstat"
)

// Canonical metrics from mntr, as measured on ZooKeeper 3.8.0 (standalone
// and a 3-server ensemble; see scrape_test.go):
//
//   - zk_sum_node_{created,deleted,changed,children}_watch_count: watchers
//     triggered, counted by the server that holds each watcher's
//     connection, so the sum over servers is the fan-out. (The cnt_ twins
//     count the triggering events.) -> MetricWatchEvents,
//     MetricWatchesTriggeredOnDelete.
//   - zk_cnt_updatelatency: writes, counted once, by the server the client
//     is connected to; session creation and close count as writes too.
//     -> MetricWrites.
//   - zk_cnt_readlatency counts reads AND pings (a session pings every third
//     of its timeout), so idle sessions move it. MetricReads is instead
//     zk_cnt_zkbench_read_per_namespace, ZooKeeper's per-namespace read
//     count for the top-level node /zkbench: reads of zkbench's own nodes,
//     counted once, without pings. MetricPings is the difference.
//   - zk_packets_received: every packet from clients, pings and session
//     handshakes included. -> MetricRequests.
//   - zk_bytes_received_count: bytes read from clients, four-letter words
//     included -> MetricBytesReceived; zk_response_bytes: bytes of the
//     replies sent (FinalRequestProcessor), and zk_watch_bytes: bytes of
//     the notifications sent (ServerCnxn.process) -> MetricBytesSent is
//     their sum.
//   - zk_cnt_fsynctime: the transaction log's syncs (FileTxnLog.commit, one
//     a batch the sync processor flushes) -> MetricLogSyncs. Their time,
//     zk_sum_fsynctime, is in whole milliseconds and is not used.
var watchSums = []string{
	"zk_sum_node_created_watch_count",
	"zk_sum_node_deleted_watch_count",
	"zk_sum_node_changed_watch_count",
	"zk_sum_node_children_watch_count",
}

// namespaceReads is ZooKeeper's read count for the top-level node of
// zkbench's namespace (3.7+; it appears after the first such read).
var namespaceReads = "zk_cnt_" + strings.TrimPrefix(backends.Root, "/") + "_read_per_namespace"

// namespaceWrites is its write count (backends.MetricNamespaceWrites).
var namespaceWrites = "zk_cnt_" + strings.TrimPrefix(backends.Root, "/") + "_write_per_namespace"

// MetricPings is zk_cnt_readlatency minus the reads below /zkbench: the
// sessions' pings, plus any reads of nodes outside /zkbench.
const MetricPings = "zkbench_zookeeper_pings"

// MetricMembersScraped is how many servers answered the scrape.
const MetricMembersScraped = "zkbench_server_members_scraped"

// statsCounters are mntr's figures from the server's request statistics
// (ServerStats), which ZooKeeper re-creates, and so starts again from zero,
// whenever a member re-joins the quorum after a leader election, without
// restarting its process; zk_uptime starts again with them. Measured on
// 3.8.0: killing the leader of an ensemble resets zk_packets_received and
// zk_uptime on the survivors, while ServerMetrics' zk_cnt_* and zk_sum_*
// counters keep counting.
var statsCounters = []string{
	"zk_packets_received", "zk_packets_sent", "zk_fsync_threshold_exceed_count", "zk_uptime",
	backends.MetricRequests,
}

var (
	_ backends.MemberScraper = (*Backend)(nil)
	_ backends.GaugeNamer    = (*Backend)(nil)
	_ backends.GaugeScraper  = (*Backend)(nil)
)

// IsGauge is fourlw.MntrGauge. Scrapes leave those names out already; it
// says so to readers of older scrapes and to the workloads' meter.
func (b *Backend) IsGauge(name string) bool { return fourlw.MntrGauge(name) }

// ScrapeGauges reads mntr on every endpoint and returns its gauges
// (fourlw.MntrGauge: zk_watch_count, zk_znode_count, connections, ...)
// summed over the servers that answered: state now, which Scrape leaves
// out. Sums of mntr's averages and percentiles, also gauges, mean nothing;
// read the instantaneous ones.
func (b *Backend) ScrapeGauges(ctx context.Context) (backends.Metrics, error) {
	out := backends.Metrics{}
	var errs []error
	for _, ep := range b.cfg.Endpoints {
		reply, err := fourlw.Query(ctx, ep, "mntr")
		if err != nil {
			errs = append(errs, fmt.Errorf("zookeeper: scrape %s: %w", ep, err))
			continue
		}
		m, _ := fourlw.ParseMntr(reply)
		for k, v := range m {
			if fourlw.MntrGauge(k) {
				out[k] += v
			}
		}
		out[backends.MetricWatchers] += m["zk_watch_count"]
	}
	if len(errs) == len(b.cfg.Endpoints) {
		return nil, errors.Join(errs...)
	}
	return out, errors.Join(errs...)
}

// Scrape reads mntr on every endpoint in parallel and returns the numeric
// values summed over servers, under mntr's names and the canonical ones
// (backends.Metric*). Only counters are returned: mntr's gauges,
// averages, minima, maxima and percentiles (fourlw.MntrGauge) are left out,
// since neither their sum over servers nor a difference of two scrapes
// means anything; the sum_ and cnt_ pairs give averages. With WithServerPIDs it adds the servers' CPU
// seconds and resident bytes from /proc. If some server does not answer,
// the others' sums are returned with an error naming it.
func (b *Backend) Scrape(ctx context.Context) (backends.Metrics, error) {
	members, _ := b.ScrapeMembers(ctx)
	var errs []error
	for _, mm := range members {
		if mm.Err != nil {
			errs = append(errs, mm.Err)
		}
	}
	m := backends.SumMembers(members)
	m[MetricMembersScraped] = float64(len(members) - len(errs))
	if len(errs) == len(members) {
		return nil, errors.Join(errs...)
	}
	return m, errors.Join(errs...)
}

// ScrapeMembers reads mntr on every endpoint in parallel, each member's
// figures under mntr's names and the canonical ones, with the server's CPU
// seconds and resident bytes where WithServerPIDs or WithServerPIDFunc
// names its process (a process that cannot be read makes the member's
// Err). StatsStarted is when the member's request statistics started
// (the reply's arrival - zk_uptime; StatsStartedEarliest from the request's
// sending); statsCounters restart with them.
func (b *Backend) ScrapeMembers(ctx context.Context) ([]backends.MemberMetrics, error) {
	pids := b.opts.serverPIDs()
	res := make([]backends.MemberMetrics, len(b.cfg.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range b.cfg.Endpoints {
		wg.Go(func() {
			res[i] = b.scrapeMember(ctx, ep, pids[ep])
		})
	}
	wg.Wait()
	slices.SortFunc(res, func(a, b backends.MemberMetrics) int { return strings.Compare(a.Endpoint, b.Endpoint) })
	return res, nil
}

func (b *Backend) scrapeMember(ctx context.Context, ep string, pid int) backends.MemberMetrics {
	mm := backends.MemberMetrics{Endpoint: ep}
	sent := time.Now()
	reply, err := fourlw.Query(ctx, ep, "mntr")
	at := time.Now()
	if err != nil {
		mm.Err = fmt.Errorf("zookeeper: scrape %s: %w", ep, err)
		return mm
	}
	m, _ := fourlw.ParseMntr(reply)
	for k := range m {
		if fourlw.MntrGauge(k) {
			delete(m, k)
		}
	}
	for _, k := range watchSums {
		m[backends.MetricWatchEvents] += m[k]
	}
	m[backends.MetricWatchesTriggeredOnDelete] = m["zk_sum_node_deleted_watch_count"]
	m[backends.MetricWrites] = m["zk_cnt_updatelatency"]
	m[backends.MetricReads] = m[namespaceReads]
	if v, ok := m[namespaceWrites]; ok {
		m[backends.MetricNamespaceWrites] = v
	}
	m[MetricPings] = m["zk_cnt_readlatency"] - m[namespaceReads]
	m[backends.MetricRequests] = m["zk_packets_received"]
	if v, ok := m["zk_cnt_fsynctime"]; ok {
		m[backends.MetricLogSyncs] = v
	}
	// Byte counters, where the server has them (3.8 does; measured: 50
	// listings of 20 names of 203 bytes moved zk_response_bytes by exactly
	// 50 × 4,198, the reply's serialised size).
	if v, ok := m["zk_bytes_received_count"]; ok {
		m[backends.MetricBytesReceived] = v
	}
	if v, ok := m["zk_response_bytes"]; ok {
		m[backends.MetricBytesSent] = v + m["zk_watch_bytes"]
	}
	if up, ok := m["zk_uptime"]; ok {
		mm.StatsStarted = at.Add(-time.Duration(up) * time.Millisecond)
		mm.StatsStartedEarliest = sent.Add(-time.Duration(up) * time.Millisecond)
		mm.Restartable = statsCounters
	}
	if pid > 0 {
		st, err := procstat.Read(pid)
		if err != nil {
			mm.Err = fmt.Errorf("zookeeper: server %s (pid %d): %w", ep, pid, err)
			return mm
		}
		m[backends.MetricCPUSeconds] = st.CPUSeconds
		m[backends.MetricResidentBytes] = float64(st.RSSBytes)
	}
	mm.Metrics = m
	return mm
}
