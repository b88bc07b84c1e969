package etcd

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/zkbench/zkbench/backends"
)

// gRPC methods whose handled calls count as writes (MetricWrites).
var writeMethods = map[string]bool{
	"Put": true, "Txn": true, "DeleteRange": true, "LeaseGrant": true, "LeaseRevoke": true,
}

// Streams whose every received message counts as a request
// (MetricRequests): one Watch or LeaseKeepAlive stream carries many.
var streamMethods = map[string]bool{"Watch": true, "LeaseKeepAlive": true}

// addCanonical adds one member's families to the canonical names that let
// workloads compare backends (see Scrape for what each one counts).
func addCanonical(m backends.Metrics, fams map[string]*dto.MetricFamily) {
	for _, name := range []string{
		backends.MetricWatchEvents, backends.MetricWrites, backends.MetricReads,
		backends.MetricRequests, backends.MetricCPUSeconds, backends.MetricResidentBytes,
	} {
		m[name] += 0 // present even when a member exports nothing yet
	}
	m[backends.MetricWatchEvents] += sum(fams["etcd_debugging_mvcc_events_total"], nil)
	handled := fams["grpc_server_handled_total"]
	m[backends.MetricWrites] += sum(handled, writeMethods)
	m[backends.MetricReads] += sum(handled, map[string]bool{"Range": true})
	m[backends.MetricRequests] += sum(handled, nil) + sum(fams["grpc_server_msg_received_total"], streamMethods)
	for name, fam := range map[string]string{
		backends.MetricBytesReceived: "etcd_network_client_grpc_received_bytes_total",
		backends.MetricBytesSent:     "etcd_network_client_grpc_sent_bytes_total",
	} {
		if f, ok := fams[fam]; ok {
			m[name] += sum(f, nil)
		}
	}
	if f, ok := fams["etcd_disk_wal_fsync_duration_seconds"]; ok {
		for _, s := range f.GetMetric() {
			m[backends.MetricLogSyncs] += float64(s.GetHistogram().GetSampleCount())
			m[backends.MetricLogSyncSeconds] += s.GetHistogram().GetSampleSum()
		}
	}
	m[backends.MetricCPUSeconds] += sum(fams["process_cpu_seconds_total"], nil)
	m[backends.MetricResidentBytes] += sum(fams["process_resident_memory_bytes"], nil)
}

// sum adds a counter's or gauge's samples, only those whose grpc_method is
// in methods when methods is not nil.
func sum(f *dto.MetricFamily, methods map[string]bool) float64 {
	var total float64
	for _, s := range f.GetMetric() {
		if methods != nil && !methods[label(s, "grpc_method")] {
			continue
		}
		switch {
		case s.Counter != nil:
			total += s.GetCounter().GetValue()
		case s.Gauge != nil:
			total += s.GetGauge().GetValue()
		case s.Untyped != nil:
			total += s.GetUntyped().GetValue()
		}
	}
	return total
}

func label(s *dto.Metric, name string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
