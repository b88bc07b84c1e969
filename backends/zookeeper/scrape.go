package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

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
var watchSums = []string{
	"zk_sum_node_created_watch_count",
	"zk_sum_node_deleted_watch_count",
	"zk_sum_node_changed_watch_count",
	"zk_sum_node_children_watch_count",
}

// namespaceReads is ZooKeeper's read count for the top-level node of
// zkbench's namespace (3.7+; it appears after the first such read).
var namespaceReads = "zk_cnt_" + strings.TrimPrefix(backends.Root, "/") + "_read_per_namespace"

// MetricPings is zk_cnt_readlatency minus the reads below /zkbench: the
// sessions' pings, plus any reads of nodes outside /zkbench.
const MetricPings = "zkbench_zookeeper_pings"

// MetricMembersScraped is how many servers answered the scrape.
const MetricMembersScraped = "zkbench_server_members_scraped"

// Scrape reads mntr on every endpoint in parallel and returns the numeric
// values summed over servers, under mntr's names and the canonical ones
// (backends.Metric*). Averages, minima and maxima are summed too: use the
// sum_ and cnt_ pairs. With WithServerPIDs it adds the servers' CPU
// seconds and resident bytes from /proc. If some server does not answer,
// the others' sums are returned with an error naming it.
func (b *Backend) Scrape(ctx context.Context) (backends.Metrics, error) {
	type one struct {
		nums map[string]float64
		err  error
	}
	res := make([]one, len(b.cfg.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range b.cfg.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reply, err := fourlw.Query(ctx, ep, "mntr")
			if err != nil {
				res[i].err = fmt.Errorf("zookeeper: scrape %s: %w", ep, err)
				return
			}
			res[i].nums, _ = fourlw.ParseMntr(reply)
		}()
	}
	wg.Wait()

	m := backends.Metrics{}
	var errs []error
	for _, r := range res {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		for k, v := range r.nums {
			m[k] += v
		}
		m[MetricMembersScraped]++
	}
	if m[MetricMembersScraped] == 0 {
		return nil, errors.Join(errs...)
	}
	for _, k := range watchSums {
		m[backends.MetricWatchEvents] += m[k]
	}
	m[backends.MetricWatchesTriggeredOnDelete] = m["zk_sum_node_deleted_watch_count"]
	m[backends.MetricWrites] = m["zk_cnt_updatelatency"]
	m[backends.MetricReads] = m[namespaceReads]
	m[MetricPings] = m["zk_cnt_readlatency"] - m[namespaceReads]
	m[backends.MetricRequests] = m["zk_packets_received"]
	if len(b.opts.pids) > 0 {
		for ep, pid := range b.opts.pids {
			st, err := procstat.Read(pid)
			if err != nil {
				errs = append(errs, fmt.Errorf("zookeeper: server %s (pid %d): %w", ep, pid, err))
				continue
			}
			m[backends.MetricCPUSeconds] += st.CPUSeconds
			m[backends.MetricResidentBytes] += float64(st.RSSBytes)
		}
	}
	return m, errors.Join(errs...)
}
