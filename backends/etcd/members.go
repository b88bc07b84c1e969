package etcd

import (
	"context"
	"math"
	"net/url"
	"sync"
	"time"

	"github.com/zkbench/zkbench/backends"
)

var _ backends.MemberScraper = (*Backend)(nil)

// ScrapeMembers reads GET /metrics from every member in parallel, as Scrape
// does, and returns each member's figures on their own (raw and canonical
// names, as Scrape's), so that a member that does not answer leaves the
// others measured. Endpoint is the host:port of the member's client URL;
// Started is its process_start_time_seconds. With Config.Embedded only the
// first member is read: in-process members share one registry.
func (b *Backend) ScrapeMembers(ctx context.Context) ([]backends.MemberMetrics, error) {
	urls, err := b.metricsURLs(ctx)
	if err != nil {
		return nil, err
	}
	client := b.httpClient()
	out := make([]backends.MemberMetrics, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			mm := backends.MemberMetrics{Endpoint: u}
			if p, err := url.Parse(u); err == nil && p.Host != "" {
				mm.Endpoint = p.Host
			}
			fams, err := fetchMetrics(ctx, client, u)
			if err != nil {
				mm.Err = err
				out[i] = mm
				return
			}
			b.noteGauges(fams)
			m := backends.Metrics{}
			addFamilies(m, fams)
			addCanonical(m, fams)
			if start := sum(fams["process_start_time_seconds"], nil); start > 0 {
				sec, frac := math.Modf(start)
				mm.Started = time.Unix(int64(sec), int64(frac*1e9))
			}
			mm.Metrics = m
			out[i] = mm
		})
	}
	wg.Wait()
	return out, nil
}
