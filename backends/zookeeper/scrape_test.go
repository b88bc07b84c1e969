package zookeeper_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/internal/fourlw"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

func scrape(t *testing.T, b backends.Backend) backends.Metrics {
	t.Helper()
	m, err := b.(backends.Scraper).Scrape(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// settled scrapes until name's delta from before reaches want, or 30 s
// pass, and returns the delta then. A server adds the watches a change
// triggered to its counts after it has queued their notifications
// (ZooKeeper's WatchManager.triggerWatch, one add of them all), so a client
// may hold its event before the count moves; usually the first scrape has
// it.
func settled(t *testing.T, b backends.Backend, before backends.Metrics, name string, want float64) backends.Metrics {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d := scrape(t, b).Delta(before)
		if d[name] >= want || time.Now().After(deadline) {
			return d
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScrapeCountsWatchFanOut arms one exists watch per session on a node,
// deletes it, and checks the servers' own count of triggered watches: one
// per session, summed over every server the sessions are spread on.
func TestScrapeCountsWatchFanOut(t *testing.T) {
	for name, open := range map[string]func(testing.TB) backends.Backend{
		"standalone": testcluster.ZooKeeperBackend,
		"ensemble":   testcluster.ZooKeeperEnsembleBackend,
	} {
		t.Run(name, func(t *testing.T) {
			const watchers = 12
			b := open(t)
			owner := newSession(t, b)
			ns := namespace(t, b, owner)
			ctx := ctxT(t)
			target := ns + "/target"
			if _, err := owner.Create(ctx, target, nil); err != nil {
				t.Fatal(err)
			}
			var chans []<-chan backends.Event
			for i := 0; i < watchers; i++ {
				s := newSession(t, b)
				_, _, ch, err := s.ExistsW(ctx, target)
				if err != nil {
					t.Fatal(err)
				}
				chans = append(chans, ch)
			}
			before := scrape(t, b)
			if err := owner.Delete(ctx, target); err != nil {
				t.Fatal(err)
			}
			for _, ch := range chans {
				select {
				case ev := <-ch:
					if ev.Type != backends.EventDeleted {
						t.Fatalf("event %v", ev.Type)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("watch did not fire")
				}
			}
			d := settled(t, b, before, backends.MetricWatchesTriggeredOnDelete, watchers)
			t.Logf("after 1 delete seen by %d watchers: %s", watchers, show(d))
			if got := d[backends.MetricWatchesTriggeredOnDelete]; got != watchers {
				t.Errorf("deleted-watch delta %v, want %d", got, watchers)
			}
			if got := d[backends.MetricWatchEvents]; got != watchers {
				t.Errorf("watch events delta %v, want %d", got, watchers)
			}
			if got := d[backends.MetricWrites]; got != 1 {
				t.Errorf("writes delta %v, want 1 (the delete)", got)
			}
			// The notifications' bytes are zk_watch_bytes (a counter, 61
			// bytes a notification measured), the replies'
			// zk_response_bytes: bytes sent are both.
			if w, r := d["zk_watch_bytes"], d["zk_response_bytes"]; w < 20*watchers || r <= 0 || d[backends.MetricBytesSent] != w+r {
				t.Errorf("bytes sent %v, notifications %v, replies %v: want the sum, at least 20 bytes a notification",
					d[backends.MetricBytesSent], w, r)
			}
			if d[backends.MetricCPUSeconds] < 0 || scrape(t, b)[backends.MetricResidentBytes] < 1<<20 {
				t.Errorf("server cost missing: %s", show(d))
			}
		})
	}
}

// TestScrapeCountsRequests checks what reads, writes and requests count.
func TestScrapeCountsRequests(t *testing.T) {
	b := testcluster.ZooKeeperBackend(t)
	s := newSession(t, b)
	ns := namespace(t, b, s)
	ctx := ctxT(t)
	before := scrape(t, b)
	const n = 20
	for i := 0; i < n; i++ {
		if _, err := s.Create(ctx, fmt.Sprintf("%s/n%d", ns, i), nil); err != nil { // 1 write
			t.Fatal(err)
		}
		if _, err := s.Children(ctx, ns); err != nil { // 1 read
			t.Fatal(err)
		}
	}
	d := scrape(t, b).Delta(before)
	t.Logf("after %d creates and %d listings: %s", n, n, show(d))
	if got := d[backends.MetricWrites]; got != n {
		t.Errorf("writes delta %v, want %d", got, n)
	}
	if got := d[backends.MetricReads]; got != n {
		t.Errorf("reads delta %v, want %d", got, n)
	}
	if got := d[backends.MetricRequests]; got < 2*n {
		t.Errorf("requests delta %v, want at least %d", got, 2*n)
	}
	// Each create, sent after the last one's reply, is synced to the
	// transaction log before its reply: no two can share a sync.
	if got := d[backends.MetricLogSyncs]; got < n {
		t.Errorf("log syncs delta %v, want at least %d", got, n)
	}
	if _, ok := d[backends.MetricLogSyncSeconds]; ok {
		t.Errorf("log sync time %v from syncs timed in whole milliseconds", d[backends.MetricLogSyncSeconds])
	}
}

// TestIdleSessionsMoveRequests shows that zk_packets_received (and so
// MetricRequests) counts pings: idle sessions move it, and nothing else.
// Five idle 4 s sessions ping every 1.33 s. Five answered pings are waited
// for on the clients' side (about 1.5 s on a quiet machine; 30 s bounds a
// loaded one, whose timers fire late), not assumed after a fixed 3 s; then
// one scrape (a server counts a ping before it answers it). Scraping while
// waiting would move the count too: every mntr is a packet received.
func TestIdleSessionsMoveRequests(t *testing.T) {
	b := testcluster.ZooKeeperBackend(t)
	ka := b.(backends.KeepAliveReporter)
	for i := 0; i < 5; i++ {
		newSession(t, b)
	}
	before, kaBefore := scrape(t, b), ka.KeepAlives()
	start := time.Now()
	for deadline := start.Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var answered int64
		for _, n := range ka.KeepAlives().Sub(kaBefore).Replies {
			answered += n
		}
		if answered >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pings answered in %v of 5 idle 4s sessions", answered, time.Since(start))
		}
	}
	d := scrape(t, b).Delta(before)
	t.Logf("5 idle sessions for %v: %s", time.Since(start).Round(time.Millisecond), show(d))
	if d[backends.MetricRequests] < 5 {
		t.Errorf("requests delta %v: 5 answered pings of idle sessions should count", d[backends.MetricRequests])
	}
	if d[zookeeper.MetricPings] < 5 {
		t.Errorf("pings delta %v after 5 answered pings of idle sessions", d[zookeeper.MetricPings])
	}
	if d[backends.MetricWrites] != 0 || d[backends.MetricReads] != 0 {
		t.Errorf("writes or reads moved while idle: %s", show(d))
	}
}

// TestScrapeLeavesGaugesOut: a scrape holds mntr's counters only, so that
// no average, percentile or gauge becomes a difference in a result (a
// results file once held zk_avg_latency -49.7).
func TestScrapeLeavesGaugesOut(t *testing.T) {
	b := testcluster.ZooKeeperBackend(t)
	newSession(t, b)
	m := scrape(t, b)
	for k := range m {
		if fourlw.MntrGauge(k) {
			t.Errorf("scrape holds gauge %s = %v", k, m[k])
		}
	}
	for _, k := range []string{"zk_packets_received", "zk_cnt_updatelatency", "zk_sum_node_deleted_watch_count", "zk_watch_bytes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("scrape lacks counter %s", k)
		}
	}
	for _, k := range []string{"zk_avg_latency", "zk_p50_propagation_latency", "zk_num_alive_connections"} {
		if _, ok := m[k]; ok {
			t.Errorf("scrape holds %s", k)
		}
	}
}

func show(m backends.Metrics) string {
	return fmt.Sprintf("watch_events=%v deleted=%v writes=%v reads=%v pings=%v requests=%v cpu=%.2fs",
		m[backends.MetricWatchEvents], m[backends.MetricWatchesTriggeredOnDelete], m[backends.MetricWrites],
		m[backends.MetricReads], m[zookeeper.MetricPings], m[backends.MetricRequests], m[backends.MetricCPUSeconds])
}

// TestKeepAlivesTimed: an idle session pings every negotiated timeout / 3,
// no more often, and each ping is answered; the pings counted late are
// those whose lateness lies beyond backends.KeepAliveLateBound. The
// interval is checked against the session timeout the server reports for
// the connection (cons: to=). How late the pings were is logged, not
// asserted: on a loaded machine a timer fires late, and the case's
// client-bound check is what reports that (docs/testing.md).
func TestKeepAlivesTimed(t *testing.T) {
	b := testcluster.ZooKeeperBackend(t)
	ka := b.(backends.KeepAliveReporter)
	before := ka.KeepAlives()
	start := time.Now()
	s := newSession(t, b)
	// Two answered pings take 2.7 s of a 4 s session on a quiet machine;
	// 30 s is ten times that.
	var d backends.KeepAliveCounts
	var pings, replies int64
	for deadline := start.Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d = ka.KeepAlives().Sub(before)
		pings, replies = 0, 0
		for i := range d.Lateness {
			pings += d.Lateness[i]
			replies += d.Replies[i]
		}
		if replies >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pings sent and %d answered within %v of an idle session: %+v", pings, replies, time.Since(start), d)
		}
	}
	elapsed := time.Since(start)
	cons, err := fourlw.Query(ctxT(t), testcluster.ZooKeeperEndpoints(t)[0], "cons")
	if err != nil {
		t.Fatal(err)
	}
	var timeout time.Duration
	for _, line := range strings.Split(cons, "\n") {
		if !strings.Contains(line, fmt.Sprintf("sid=0x%x,", s.ID())) {
			continue
		}
		_, rest, _ := strings.Cut(line, ",to=")
		ms, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.Atoi(ms)
		timeout = time.Duration(n) * time.Millisecond
	}
	if timeout == 0 {
		t.Fatalf("session 0x%x not in cons:\n%s", s.ID(), cons)
	}
	t.Logf("%v idle with a %v session: %d pings, %d answered; lateness %v, round trips %v, %d late",
		elapsed.Round(time.Millisecond), timeout, pings, replies, d.Lateness, d.Replies, d.Late)
	if most := int64(elapsed / (timeout / 3)); d.What != backends.KeepAlivePingSent || d.Interval != timeout/3 || pings > most || replies > pings {
		t.Fatalf("%v idle with a %v session: %+v (%d pings, %d replies): want interval %v, at most %d pings, no more answered than sent",
			elapsed, timeout, d, pings, replies, timeout/3, most)
	}
	if lo, hi := lateBounds(d); d.Late < lo || d.Late > hi {
		t.Fatalf("%d pings counted late; their lateness %v puts %d to %d beyond %v", d.Late, d.Lateness, lo, hi, backends.KeepAliveLateBound(d.Interval))
	}
}

// lateBounds returns how many of d's keep-alives lie surely, and how many
// possibly, beyond KeepAliveLateBound of d's interval, from the buckets.
func lateBounds(d backends.KeepAliveCounts) (lo, hi int64) {
	bound := backends.KeepAliveLateBound(d.Interval)
	for i, c := range d.Lateness {
		if i > 0 && backends.DurationBounds[i-1] >= bound {
			lo += c
		}
		if i == len(backends.DurationBounds) || backends.DurationBounds[i] > bound {
			hi += c
		}
	}
	return lo, hi
}
