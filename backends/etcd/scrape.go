package etcd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkbench/zkbench/backends"
)

// Scrape reads GET /metrics from every member's client URL (from
// MemberList; the configured endpoints if that fails), parses the text
// format with expfmt, and returns every sample summed over members under its
// raw name with sorted labels (`grpc_server_handled_total{grpc_code="OK",
// grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"}`;
// histograms and summaries as name_sum and name_count only). Gauges are
// kept, and named by IsGauge, so that a result leaves them out
// (backends.Metrics.CounterDelta). Canonical names are added:
//
//   - MetricWatchEvents = etcd_debugging_mvcc_events_total: events the
//     members' watch streams took off their queues to send, one per event per
//     watcher (a watcher on a prefix counts every key it matches, also those
//     a client filters out, like ChildrenW's value changes).
//   - MetricWrites = grpc_server_handled_total for Put, Txn, DeleteRange,
//     LeaseGrant and LeaseRevoke, any code (a Txn counts as a write even
//     when it only reads).
//   - MetricReads = grpc_server_handled_total for Range.
//   - MetricRequests = grpc_server_handled_total over every method (a stream
//     counts once, when it ends) plus grpc_server_msg_received_total for the
//     Watch and LeaseKeepAlive streams (each watch create/cancel request and
//     each keepalive).
//   - MetricBytesReceived = etcd_network_client_grpc_received_bytes_total
//     and MetricBytesSent = etcd_network_client_grpc_sent_bytes_total: the
//     gRPC messages' bytes from and to clients, every method and stream.
//   - MetricLogSyncs and MetricLogSyncSeconds = the count and sum of
//     etcd_disk_wal_fsync_duration_seconds: the WAL's fsyncs and their time.
//   - MetricCPUSeconds = process_cpu_seconds_total and MetricResidentBytes =
//     process_resident_memory_bytes. With Config.Embedded these are zkbench's
//     own process, and only the first member is read, since in-process
//     members share one Prometheus registry.
func (b *Backend) Scrape(ctx context.Context) (backends.Metrics, error) {
	urls, err := b.metricsURLs(ctx)
	if err != nil {
		return nil, err
	}
	client := b.httpClient()
	m := make(backends.Metrics)
	var mu sync.Mutex
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			fams, err := fetchMetrics(ctx, client, u)
			if err != nil {
				errs[i] = err
				return
			}
			b.noteGauges(fams)
			mu.Lock()
			addFamilies(m, fams)
			addCanonical(m, fams)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// metricsURLs lists each member's first client URL + "/metrics", sorted;
// with Config.Embedded only the first, since in-process members share one
// Prometheus registry.
func (b *Backend) metricsURLs(ctx context.Context) ([]string, error) {
	var urls []string
	if cli, err := b.adminClient(); err == nil {
		if resp, err := cli.MemberList(ctx); err == nil {
			for _, mem := range resp.Members {
				if len(mem.ClientURLs) > 0 {
					urls = append(urls, strings.TrimSuffix(mem.ClientURLs[0], "/")+"/metrics")
				}
			}
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("etcd: scrape: %w", ctx.Err())
	}
	if len(urls) == 0 {
		scheme := "http"
		if b.tls != nil {
			scheme = "https"
		}
		for _, e := range b.eps {
			urls = append(urls, scheme+"://"+e.host+"/metrics")
		}
	}
	slices.Sort(urls)
	if b.cfg.Embedded {
		urls = urls[:1]
	}
	return urls, nil
}

func (b *Backend) httpClient() *http.Client {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.http == nil {
		b.http = &http.Client{Transport: &http.Transport{TLSClientConfig: b.tls, MaxIdleConnsPerHost: 2}}
	}
	return b.http
}

func fetchMetrics(ctx context.Context, client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	body, err := get(ctx, client, "scrape", url, "")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		return nil, fmt.Errorf("etcd: scrape %s: parse: %w", url, err)
	}
	return fams, nil
}

// get GETs url from a member and returns the body of a 200 answer; errors
// name what was read ("scrape", "heap") and, for another status, end with
// hint. The caller closes the body.
func get(ctx context.Context, client *http.Client, what, url, hint string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("etcd: %s %s: %w", what, url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("etcd: %s %s: %w", what, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		return nil, fmt.Errorf("etcd: %s %s: HTTP %s%s", what, url, resp.Status, hint)
	}
	return resp.Body, nil
}

// noteGauges remembers the gauge families of a scrape (TYPE gauge or
// gauge histogram), for IsGauge.
func (b *Backend) noteGauges(fams map[string]*dto.MetricFamily) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gauges == nil {
		b.gauges = map[string]bool{}
	}
	for name, f := range fams {
		switch f.GetType() {
		case dto.MetricType_GAUGE:
			b.gauges[name] = true
		case dto.MetricType_GAUGE_HISTOGRAM:
			b.gauges[name+"_sum"], b.gauges[name+"_count"] = true, true
		}
	}
}

var _ backends.GaugeNamer = (*Backend)(nil)

// IsGauge reports whether the raw name (labels and all) belongs to a
// family a scrape declared a gauge (etcd_debugging_mvcc_watcher_total,
// etcd_server_has_leader, process_resident_memory_bytes, ...: etcd names
// some gauges _total, so only the TYPE line tells).
// ScrapeGauges is Scrape's gauges (IsGauge) alone: values now, such as
// etcd_debugging_mvcc_watcher_total, summed over the members.
func (b *Backend) ScrapeGauges(ctx context.Context) (backends.Metrics, error) {
	m, err := b.Scrape(ctx)
	if m == nil {
		return nil, err
	}
	out := backends.Metrics{}
	for k, v := range m {
		if b.IsGauge(k) {
			out[k] = v
		}
	}
	out[backends.MetricWatchers] = m["etcd_debugging_mvcc_watcher_total"]
	return out, err
}

var _ backends.GaugeScraper = (*Backend)(nil)

func (b *Backend) IsGauge(name string) bool {
	if i := strings.IndexByte(name, '{'); i >= 0 {
		name = name[:i]
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gauges[name]
}

// addFamilies adds every sample to m under its raw name.
func addFamilies(m backends.Metrics, fams map[string]*dto.MetricFamily) {
	for name, f := range fams {
		for _, s := range f.GetMetric() {
			key := rawName(name, s.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				m[key] += s.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				m[key] += s.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				m[key] += s.GetUntyped().GetValue()
			case dto.MetricType_SUMMARY:
				m[rawName(name+"_sum", s.GetLabel())] += s.GetSummary().GetSampleSum()
				m[rawName(name+"_count", s.GetLabel())] += float64(s.GetSummary().GetSampleCount())
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				m[rawName(name+"_sum", s.GetLabel())] += s.GetHistogram().GetSampleSum()
				m[rawName(name+"_count", s.GetLabel())] += float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
}

// rawName is name{a="x",b="y"} with labels sorted by name, or name alone.
func rawName(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	pairs := make([]string, len(labels))
	for i, l := range labels {
		pairs[i] = fmt.Sprintf("%s=%q", l.GetName(), l.GetValue())
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}
