package backends

import (
	"context"
	"strings"
	"time"
)

// Backend is a connection to one cluster from which sessions are opened.
// cmd/zkbench is the only place that picks a concrete Backend.
//
// Methods may be called concurrently. Close ends every session still open.
type Backend interface {
	Kind() Kind
	// Preflight checks, under ctx's deadline, that every endpoint answers and
	// speaks this backend's protocol, and describes the cluster. It fails
	// fast with an error that says what to do; it never hangs past ctx.
	Preflight(ctx context.Context) (ClusterInfo, error)
	// NewSession opens one session (its own connection unless the backend was
	// configured to share connections) and waits until it is usable.
	NewSession(ctx context.Context) (Session, error)
	// Close ends all sessions the backend opened and releases its clients.
	Close() error
}

// Admin is what zkbench needs to manage its namespace: list and remove whole
// subtrees. Implemented by every Backend; found by type assertion.
type Admin interface {
	// List returns the names of path's direct children (etcd: the distinct
	// next path elements of keys below path+"/"). Empty if none.
	List(ctx context.Context, path string) ([]string, error)
	// DeleteTree removes path and everything below it. Callers must only pass
	// paths inside zkbench's namespace (see Namespace).
	DeleteTree(ctx context.Context, path string) error
}

// Scraper reads the servers' own counters. Implemented by backends that can
// (ZooKeeper mntr, etcd /metrics); found by type assertion.
type Scraper interface {
	// Scrape reads every member and returns counters summed over members,
	// under both their raw names and the canonical names below.
	Scrape(ctx context.Context) (Metrics, error)
}

// ClusterInfo describes a cluster as Preflight found it.
type ClusterInfo struct {
	Kind    Kind         `json:"kind"`
	Members []MemberInfo `json:"members"`
	// MaxClientCnxns is ZooKeeper's per-IP connection limit (0 = unlimited,
	// -1 = unknown or not applicable).
	MaxClientCnxns int `json:"max_client_cnxns"`
}

// MemberInfo is one server.
type MemberInfo struct {
	Endpoint string `json:"endpoint"`
	Version  string `json:"version"`
	// Role is "leader", "follower", "standalone", ... as the server says.
	Role string `json:"role,omitempty"`
	// RTT is the round trip of the preflight probe.
	RTT time.Duration `json:"rtt_ns"`
	// PID is the server's process id when zkbench runs it locally (else 0),
	// for CPU and memory accounting.
	PID int `json:"pid,omitempty"`
}

// Metrics are server counters by name. Raw names are the server's own
// (ZooKeeper "zk_packets_received", etcd
// `grpc_server_handled_total{grpc_method="Range",...}` with labels sorted);
// canonical names below are filled by every Scraper so workloads can compare
// backends.
type Metrics map[string]float64

// Canonical server metric names.
const (
	// MetricWatchEvents: watch notifications the servers sent to clients.
	// ZooKeeper: sum of zk_sum_node_{created,deleted,changed,children}_watch_count
	// (watchers triggered); etcd: etcd_debugging_mvcc_events_total.
	MetricWatchEvents = "zkbench_server_watch_events"
	// MetricWatchesTriggeredOnDelete: ZooKeeper zk_sum_node_deleted_watch_count.
	MetricWatchesTriggeredOnDelete = "zkbench_server_watches_triggered_deleted"
	// MetricWrites: write requests processed (ZooKeeper zk_cnt_updatelatency,
	// etcd put+txn+delete-range+lease grant/revoke gRPC calls handled).
	MetricWrites = "zkbench_server_writes"
	// MetricNamespaceWrites: write requests to nodes below zkbench's
	// top-level node (ZooKeeper 3.7+ zk_cnt_zkbench_write_per_namespace):
	// zkbench's own writes, which another client of a shared server does
	// not move. Absent where the server does not keep it.
	MetricNamespaceWrites = "zkbench_server_namespace_writes"
	// MetricReads: read requests processed (ZooKeeper
	// zk_cnt_zkbench_read_per_namespace, the reads below /zkbench, because
	// zk_cnt_readlatency also counts every session's pings; etcd Range gRPC
	// calls handled).
	MetricReads = "zkbench_server_reads"
	// MetricRequests: all client requests received (ZooKeeper
	// zk_packets_received, etcd grpc_server_handled_total over every method).
	MetricRequests = "zkbench_server_requests"
	// MetricBytesReceived: bytes the servers received from clients, whole
	// messages (ZooKeeper zk_bytes_received_count, which also counts
	// four-letter words such as zkbench's own mntr scrapes; etcd
	// etcd_network_client_grpc_received_bytes_total).
	MetricBytesReceived = "zkbench_server_bytes_received"
	// MetricBytesSent: bytes the servers sent to clients, whole messages
	// (ZooKeeper zk_response_bytes, the replies, plus zk_watch_bytes, the
	// notifications; etcd
	// etcd_network_client_grpc_sent_bytes_total).
	MetricBytesSent = "zkbench_server_bytes_sent"
	// MetricLogSyncs: the syncs to disk of the servers' write-ahead logs
	// (ZooKeeper zk_cnt_fsynctime, its transaction log's; etcd
	// etcd_disk_wal_fsync_duration_seconds_count, the WAL's), summed over
	// the members, each of which syncs its own log. A server that commits
	// several writes with one sync (group commit) makes fewer syncs than
	// writes.
	MetricLogSyncs = "zkbench_server_log_syncs"
	// MetricLogSyncSeconds: the time those syncs took, summed over the
	// members (etcd etcd_disk_wal_fsync_duration_seconds_sum). Absent for
	// ZooKeeper, which times them in whole milliseconds
	// (zk_sum_fsynctime): a sync under a millisecond counts 0.
	MetricLogSyncSeconds = "zkbench_server_log_sync_seconds"
	// MetricCPUSeconds: server process CPU time, where the server exports it.
	MetricCPUSeconds = "zkbench_server_cpu_seconds"
	// MetricResidentBytes: server resident memory (a gauge, not a counter).
	MetricResidentBytes = "zkbench_server_resident_bytes"
	// MetricWatchers: the watches the servers hold now, a gauge that
	// ScrapeGauges adds (ZooKeeper zk_watch_count, etcd
	// etcd_debugging_mvcc_watcher_total, summed over the members).
	MetricWatchers = "zkbench_server_watchers"
)

// HeapReader is a Backend that reads its servers' live heap: the bytes
// still reachable after a garbage collection it forces, summed over the
// members. The collection pauses each server: read it outside a measured
// interval. source says how it was read. Found by type assertion.
type HeapReader interface {
	LiveHeap(ctx context.Context) (bytes float64, source string, err error)
}

// GaugeNamer is a Scraper that knows which of its raw names are gauges
// (values now: connections, watchers, averages, percentiles), whose
// difference over an interval is no count of anything. Found by type
// assertion; workloads leave gauges out of a result's server figures
// (CounterDelta).
type GaugeNamer interface {
	IsGauge(name string) bool
}

// GaugeScraper reads the servers' gauges: values now (watches armed,
// connections, nodes), summed over the members that answered, under the
// servers' own names. Scrape returns counters for differences over a case;
// this is for state at one instant (a test waiting until N waiters have
// each armed a watch). If some member does not answer, the others' sums
// come with an error naming it. Found by type assertion.
type GaugeScraper interface {
	ScrapeGauges(ctx context.Context) (Metrics, error)
}

// Delta returns after - before. Canonical names (prefix "zkbench_") are
// always kept, so a measured zero stays distinguishable from "not measured";
// raw server names are kept only where they moved, which keeps results files
// small (an etcd member exports about a thousand series). The one gauge
// among the canonical names, MetricResidentBytes, keeps after's value; a
// raw gauge is differenced like a counter (a test may want the change in
// the number of watchers): CounterDelta leaves raw gauges out.
func (after Metrics) Delta(before Metrics) Metrics { return after.CounterDelta(before, nil) }

// CounterDelta is Delta without the raw names isGauge reports as gauges
// (nil: none): what a result keeps of the servers' figures, so that no
// gauge, average or percentile becomes a difference.
func (after Metrics) CounterDelta(before Metrics, isGauge func(string) bool) Metrics {
	d := make(Metrics)
	for k, v := range after {
		switch {
		case k == MetricResidentBytes:
			d[k] = v
		case isGauge != nil && !strings.HasPrefix(k, canonicalPrefix) && isGauge(k):
		case strings.HasPrefix(k, canonicalPrefix):
			d[k] = v - before[k]
		case v != before[k]:
			d[k] = v - before[k]
		}
	}
	return d
}

const canonicalPrefix = "zkbench_"
