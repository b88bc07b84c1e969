package etcd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	"github.com/zkbench/zkbench/internal/procstat"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

func scrape(t *testing.T, b *etcd.Backend) backends.Metrics {
	t.Helper()
	m, err := b.Scrape(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// settle scrapes until name's delta from before reaches want (server
// counters may lag the client's view by a moment), then returns the delta.
func settle(t *testing.T, b *etcd.Backend, before backends.Metrics, name string, want float64) float64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := scrape(t, b).Delta(before)[name]
		if d >= want || time.Now().After(deadline) {
			return d
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScrapeNamesGauges: a scrape keeps gauges, the backend names them by
// their TYPE (etcd calls some gauges _total), and the difference a result
// keeps (CounterDelta) leaves them out; the canonical resident bytes stays,
// as its value.
func TestScrapeNamesGauges(t *testing.T) {
	b, _ := open(t)
	m0 := scrape(t, b)
	session(t, b)
	m1 := scrape(t, b)
	for _, k := range []string{"etcd_server_has_leader", "etcd_debugging_mvcc_watcher_total", "go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := m1[k]; !ok {
			t.Errorf("scrape lacks gauge %s", k)
		}
		if !b.IsGauge(k) {
			t.Errorf("IsGauge(%s) = false", k)
		}
	}
	for _, k := range []string{"process_cpu_seconds_total", `grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"}`} {
		if b.IsGauge(k) {
			t.Errorf("IsGauge(%s) = true for a counter", k)
		}
	}
	d := m1.CounterDelta(m0, b.IsGauge)
	for k := range d {
		if b.IsGauge(k) {
			t.Errorf("CounterDelta kept gauge %s = %v", k, d[k])
		}
	}
	if d[backends.MetricResidentBytes] <= 0 {
		t.Errorf("canonical resident bytes %v", d[backends.MetricResidentBytes])
	}
}

// Writes, reads and watch events each move their canonical counter by
// exactly what was done, and the raw names carry sorted labels.
func TestScrapeCountsOperations(t *testing.T) {
	b, ns := open(t)
	const creates, gets, watchers = 5, 7, 4
	owner := session(t, b)
	ws := make([]*etcd.Session, watchers)
	for i := range ws {
		ws[i] = session(t, b)
	}
	ctx := ctxFor(t, 30*time.Second)

	m0 := scrape(t, b)
	for i := range creates {
		if _, err := owner.Create(ctx, fmt.Sprintf("%s/n%d", ns, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if d := settle(t, b, m0, backends.MetricWrites, creates); d != creates {
		t.Errorf("writes delta %v after %d creates", d, creates)
	}
	m1 := scrape(t, b)
	for range gets {
		if _, _, err := owner.Get(ctx, ns+"/n0"); err != nil {
			t.Fatal(err)
		}
	}
	if d := settle(t, b, m1, backends.MetricReads, gets); d != gets {
		t.Errorf("reads delta %v after %d gets", d, gets)
	}
	if d := scrape(t, b).Delta(m0)[backends.MetricRequests]; d < creates+gets {
		t.Errorf("requests delta %v, want at least %d", d, creates+gets)
	}

	// One event per watcher, as the clients receive them.
	chs := make([]<-chan backends.Event, watchers)
	for i, w := range ws {
		_, _, ch, err := w.ExistsW(ctx, ns+"/n0")
		if err != nil {
			t.Fatal(err)
		}
		chs[i] = ch
	}
	m2 := scrape(t, b)
	if err := owner.Delete(ctx, ns+"/n0"); err != nil {
		t.Fatal(err)
	}
	for _, ch := range chs {
		event(t, ch, 10*time.Second)
	}
	if d := settle(t, b, m2, backends.MetricWatchEvents, watchers); d != watchers {
		t.Errorf("watch events delta %v, %d events received", d, watchers)
	}

	m := scrape(t, b)
	raw := `grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"}`
	if m[raw] < gets {
		t.Errorf("%s = %v, want at least %d", raw, m[raw], gets)
	}
	if m[backends.MetricCPUSeconds] <= 0 || m[backends.MetricResidentBytes] <= 0 || !b.Embedded() {
		t.Errorf("cpu %v rss %v embedded %v", m[backends.MetricCPUSeconds], m[backends.MetricResidentBytes], b.Embedded())
	}
	for k := range m {
		if strings.Contains(k, "{") && !strings.HasSuffix(k, "}") {
			t.Errorf("malformed raw name %q", k)
		}
	}
}

// etcd_debugging_mvcc_events_total counts events the server sends, before
// any client-side filter: a prefix watcher (ChildrenW) is sent a child's
// value change that it does not deliver. The server count is then one more
// than the events received.
func TestWatchEventsCountServerSideEvents(t *testing.T) {
	b, ns := open(t)
	owner, watcher := session(t, b), session(t, b)
	ctx := ctxFor(t, 30*time.Second)
	if _, err := owner.Create(ctx, ns+"/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	_, ch, err := watcher.ChildrenW(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	m0 := scrape(t, b)
	if _, err := direct(t).Put(ctx, ns+"/a", "2"); err != nil { // value change: filtered
		t.Fatal(err)
	}
	quiet(t, ch, 300*time.Millisecond)
	if _, err := owner.Create(ctx, ns+"/b", nil); err != nil {
		t.Fatal(err)
	}
	event(t, ch, 10*time.Second)
	if d := settle(t, b, m0, backends.MetricWatchEvents, 2); d != 2 {
		t.Fatalf("server counted %v watch events; the client received 1 after 1 filtered", d)
	}
}

// Against members in separate processes, counters are summed over members
// and the process figures are the servers', not this process's.
func TestScrapeSeparateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 etcd processes")
	}
	l := startLocal(t, 3)
	b, err := etcd.New(etcd.Config{Endpoints: l.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := b.OpenSession(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := ctxFor(t, 30*time.Second)
	m0 := scrape(t, b)
	const creates = 6
	for range creates {
		if _, err := s.CreateSequential(ctx, "/zkbench/scrape-test", "n-", nil); err != nil {
			t.Fatal(err)
		}
	}
	if d := settle(t, b, m0, backends.MetricWrites, creates); d != creates {
		t.Errorf("writes delta %v summed over 3 members after %d creates", d, creates)
	}
	var rss float64
	for _, pid := range l.PIDs() {
		st, err := procstat.Read(pid)
		if err != nil {
			t.Fatal(err)
		}
		rss += float64(st.RSSBytes)
	}
	got := scrape(t, b)[backends.MetricResidentBytes]
	if got < 0.8*rss || got > 1.25*rss {
		t.Errorf("scraped resident bytes %.0f, /proc says the 3 members hold %.0f", got, rss)
	}
	t.Logf("3 members: %.1f MiB resident (scraped), %.1f MiB (/proc)", got/(1<<20), rss/(1<<20))

	// The members' live heap (pprof after a forced collection) is read
	// from each, and is some of what they hold resident; a watch armed
	// shows in the watchers gauge.
	heap, source, err := b.LiveHeap(ctx)
	if err != nil || source == "" {
		t.Fatalf("live heap of the member processes: %v, %q", err, source)
	}
	if heap < 3<<20 || heap > rss {
		t.Errorf("live heap %.0f bytes over 3 members, resident %.0f: want at least 1 MiB a member and no more than resident", heap, rss)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if _, _, _, err := s.ExistsW(wctx, "/zkbench/scrape-test/watched"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := b.ScrapeGauges(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g[backends.MetricWatchers] >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watchers gauge %v 10s after a watch was armed", g[backends.MetricWatchers])
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("3 members: %.1f MiB live heap (%s)", heap/(1<<20), source)
}

// An embedded server's heap is this process's: LiveHeap says so instead of
// a figure.
func TestLiveHeapEmbedded(t *testing.T) {
	b := testcluster.EtcdBackend(t)
	_, _, err := b.(backends.HeapReader).LiveHeap(ctxFor(t, 10*time.Second))
	if err == nil || !strings.Contains(err.Error(), "embedded") {
		t.Fatalf("LiveHeap on the embedded server: %v, want the reason it is not read", err)
	}
}

// The WAL's syncs are counted and timed (MetricLogSyncs,
// MetricLogSyncSeconds): each of n puts, sent one after another's reply,
// is synced before its reply, so the member syncs at least n times. The
// shared test members skip fsync, and etcd then times no sync; this member
// syncs, as zkbench's own do.
func TestScrapeCountsLogSyncs(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	srv, err := etcdcluster.StartEmbedded(ctx, etcdcluster.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	b, err := etcd.New(etcd.Config{Endpoints: srv.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 10
	before := scrape(t, b)
	for i := range n {
		if _, err := c.Put(ctx, fmt.Sprintf("%s/sync%d", backends.Root, i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	d := settle(t, b, before, backends.MetricLogSyncs, n)
	secs := scrape(t, b).Delta(before)[backends.MetricLogSyncSeconds]
	t.Logf("%d puts: %v syncs, %.3f ms of syncing", n, d, secs*1000)
	if d < n || secs <= 0 {
		t.Errorf("%d puts, one after another: %v log syncs taking %v s, want at least %d syncs and their time", n, d, secs, n)
	}
}
