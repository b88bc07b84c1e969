package recipetest

import (
	"context"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// Names of the servers' gauge of watches armed now, as
// backends.GaugeScraper returns them (summed over servers).
const (
	// zkWatchesArmed is mntr's zk_watch_count: watches the server holds for
	// its clients' sessions. A fired watch is removed at once.
	zkWatchesArmed = "zk_watch_count"
	// etcdWatchersArmed is etcd_debugging_mvcc_watcher_total: watchers the
	// members' stores hold, synced or not. A client's cancel removes one a
	// moment later.
	etcdWatchersArmed = "etcd_debugging_mvcc_watcher_total"
)

// serverCounts is the servers' own view of the herd: watches armed now and
// watch notifications sent so far (backends.MetricWatchEvents: ZooKeeper's
// zk_sum_node_{created,deleted,changed,children}_watch_count summed over
// servers, etcd's etcd_debugging_mvcc_events_total). It checks the herd of
// variants whose requests the instrument never sees (native), and is a
// second witness for the others.
//
// The counters are server-wide, not per path. They are scoped to one
// subtest by what the suites guarantee: the servers are this test binary's
// own (internal/testenv/testcluster starts one set per binary; the in-process etcd
// members share one Prometheus registry, so their counts add up), and the
// suites' subtests run one after another, so between two scrapes only the
// subtest's own clients touch them. unchanged checks that over a quiet
// window before anything is measured, so a test run in parallel with the suite fails loudly instead of
// being counted.
type serverCounts struct {
	t     *testing.T
	sc    backends.Scraper
	gs    backends.GaugeScraper
	gauge string // the armed-watches gauge of b's kind
}

// newServerCounts returns b's server counts; the test fails if b cannot be
// scraped.
func newServerCounts(t *testing.T, b backends.Backend) *serverCounts {
	t.Helper()
	sc, ok := b.(backends.Scraper)
	gs, gok := b.(backends.GaugeScraper)
	if !ok || !gok {
		t.Fatalf("backend %s does not implement backends.Scraper and backends.GaugeScraper: no server-side herd counts", b.Kind())
	}
	armed := zkWatchesArmed
	if b.Kind() == backends.Etcd {
		armed = etcdWatchersArmed
	}
	return &serverCounts{t: t, sc: sc, gs: gs, gauge: armed}
}

// read scrapes the servers once: watches armed now, notifications sent so far.
func (s *serverCounts) read() (armed, notified int64) {
	s.t.Helper()
	n := s.figure(s.sc.Scrape, backends.MetricWatchEvents, "scraping the servers", "server metrics")
	a := s.figure(s.gs.ScrapeGauges, s.gauge, "reading the servers' gauges", "server gauges")
	return int64(a), int64(n)
}

// figure returns name's value in what read returns under opTimeout. The
// test fails with "<doing>: <error>" if read fails, and with "<what> lack
// <name>" if name is missing.
func (s *serverCounts) figure(read func(context.Context) (backends.Metrics, error), name, doing, what string) float64 {
	s.t.Helper()
	m := within(s.t, doing, read)
	v, ok := m[name]
	if !ok {
		s.t.Fatalf("%s lack %s", what, name)
	}
	return v
}

// armedNow returns the watches the servers hold now.
func (s *serverCounts) armedNow() int64 {
	s.t.Helper()
	a, _ := s.read()
	return a
}

// armedSettled returns the watches the servers hold once that count has
// held still for a while (or after settleBound): the watches of the
// previous test's closed sessions may still be leaving (etcd cancels a
// closed stream's watchers after the close returns), and a base read while
// they do is too high, so that asleep would wait for watches no waiter
// misses.
func (s *serverCounts) armedSettled() int64 {
	s.t.Helper()
	const stillFor = 200 * time.Millisecond
	deadline := time.Now().Add(settleBound)
	last, since := s.armedNow(), time.Now()
	for time.Since(since) < stillFor && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if a := s.armedNow(); a != last {
			last, since = a, time.Now()
		}
	}
	return last
}

// asleep waits until the servers hold at least n more watches than base
// (each of n waiters has armed its one watch).
func (s *serverCounts) asleep(base int64, n int) {
	s.t.Helper()
	deadline := time.Now().Add(settleBound)
	for {
		a := s.armedNow()
		if a-base >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("after %v: the servers hold %d watches more than before the %d waiters came, want %d", settleBound, a-base, n, n)
		}
		time.Sleep(pollEvery)
	}
}

// notified returns the watch notifications the servers have sent so far.
func (s *serverCounts) notified() int64 {
	s.t.Helper()
	_, n := s.read()
	return n
}

// unchanged returns the servers' notification count after checking that it
// is still n, read before the clients were left idle for a quiet window:
// nothing else fired a watch meanwhile.
func (s *serverCounts) unchanged(n int64) int64 {
	s.t.Helper()
	if now := s.notified(); now != n {
		s.t.Fatalf("the servers sent %d watch notifications while the suite's clients were idle: another test uses this binary's servers", now-n)
	}
	return n
}

// atLeast waits until the servers have sent at least want notifications
// since the count from, or settleBound passes (the caller's check of
// since then fails).
func (s *serverCounts) atLeast(from, want int64) {
	s.t.Helper()
	deadline := time.Now().Add(settleBound)
	for s.notified()-from < want && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
	}
}

// since returns the notifications the servers have sent since the count
// from.
func (s *serverCounts) since(from int64) int64 {
	s.t.Helper()
	return s.notified() - from
}
