package etcd_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/faults/proxy"
)

// slowReplies are the delays, tried in turn, of the server's answers
// through a proxy, so that a test can change a key while an ExistsW or
// ChildrenW is between its steps: a second is plenty on a quiet machine; a
// loaded one may need the test's own steps (a scrape, a write) to take
// longer than that, and then the case is tried again with a longer delay.
var slowReplies = []time.Duration{time.Second, 4 * time.Second, 16 * time.Second}

// Raw metrics of the shared embedded member (the tests of this package run
// one at a time, so their deltas are the test's own).
const (
	metricWatchers = "etcd_debugging_mvcc_watcher_total"
	metricRanges   = `grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"}`
	// Requests received on Watch streams: creates and cancels.
	metricWatchMessages = `grpc_server_msg_received_total{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"}`
	// Watch streams opened.
	metricWatchStreams = `grpc_server_started_total{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"}`
)

// anchored arms and cancels one watch on s, whose scrapes m reads, and
// returns once the session's anchor watch (which holds its watch stream
// open from its first watch until it ends) is the one watcher it left on
// the server: a test's later watcher and watch-request counts are then its
// own watches'.
func anchored(t *testing.T, m *etcd.Backend, s *etcd.Session, ns string) {
	t.Helper()
	m0 := scrape(t, m)
	ctx, cancel := context.WithCancel(ctxFor(t, 30*time.Second))
	_, _, ch, err := s.ExistsW(ctx, ns+"/primer")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	for range ch {
	}
	until(t, m, 10*time.Second, "the anchor alone", func(now backends.Metrics) bool {
		d := now.Delta(m0)
		return d[metricWatchers] == 1 && d[metricWatchMessages] == 3 // primer's create and cancel, the anchor's create
	})
}

// One-shot watches one after another, as a lock waiter's, run on one watch
// stream: the session's anchor watch holds it open between them (without
// it clientv3 ends the stream with its last watch, and the member sets up
// and tears down a stream for every one). Closing the session ends the
// anchor and the stream.
func TestWatchesShareOneStream(t *testing.T) {
	b, ns := open(t)
	s, err := b.OpenSession(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := direct(t)
	ctx := ctxFor(t, 60*time.Second)
	m0 := scrape(t, b)
	const n = 10
	for i := range n {
		ch, key := armOne(t, ctx, s, ns, i)
		if _, err := c.Put(ctx, key, "v"); err != nil {
			t.Fatal(err)
		}
		if ev := event(t, ch, 10*time.Second); ev.Type == backends.EventSessionLost {
			t.Fatalf("watch %d: %+v", i, ev)
		}
		for range ch {
		}
	}
	// Every watch but the anchor ends: n creates and n cancels, and the
	// anchor's create.
	until(t, b, 10*time.Second, "the watches' cancels", func(now backends.Metrics) bool {
		d := now.Delta(m0)
		return d[metricWatchers] == 1 && d[metricWatchMessages] == 2*n+1
	})
	if d := scrape(t, b).Delta(m0); d[metricWatchStreams] != 1 {
		t.Fatalf("%d watches one after another opened %v watch streams, want 1", n, d[metricWatchStreams])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	until(t, b, 10*time.Second, "the anchor's end", func(now backends.Metrics) bool { return now.Delta(m0)[metricWatchers] == 0 })
}

// until scrapes b until ok holds, failing after d.
func until(t *testing.T, b *etcd.Backend, d time.Duration, what string, ok func(backends.Metrics) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok(scrape(t, b)) {
		if time.Now().After(deadline) {
			t.Fatalf("server metrics: no %s within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// armed is what an ExistsW or ChildrenW call returned: the state it read
// ("exists" / "absent", or the children's names) and its channel.
type armed struct {
	state string
	ch    <-chan backends.Event
	err   error
}

// The read and the watch together see every change exactly once: a change
// made after the watch is registered but before the read is in the read and
// does not fire; a change made after the read, before the caller has its
// answer, fires. The proxy holds the server's answers for one of
// slowReplies, and the server's metrics say which step has been taken.
func TestWatchSeesExactlyTheChangesAfterItsRead(t *testing.T) {
	existsW := func(ctx context.Context, s *etcd.Session, ns string) armed {
		ok, _, ch, err := s.ExistsW(ctx, ns+"/k")
		return armed{state: map[bool]string{true: "exists", false: "absent"}[ok], ch: ch, err: err}
	}
	childrenW := func(ctx context.Context, s *etcd.Session, ns string) armed {
		kids, ch, err := s.ChildrenW(ctx, ns)
		names := make([]string, len(kids))
		for i, k := range kids {
			names[i] = k.Name
		}
		return armed{state: "[" + strings.Join(names, " ") + "]", ch: ch, err: err}
	}
	c := direct(t)
	put := func(key string) func(ctx context.Context, ns string) error {
		return func(ctx context.Context, ns string) error { _, err := c.Put(ctx, ns+key, "v"); return err }
	}
	del := func(key string) func(ctx context.Context, ns string) error {
		return func(ctx context.Context, ns string) error { _, err := c.Delete(ctx, ns+key); return err }
	}
	nothing := func(context.Context, string) error { return nil }
	key := func(ns string) string { return ns + "/k" }
	dir := func(ns string) string { return ns }
	for _, k := range []watchCase{
		{name: "exists/change-before-read", setup: put("/k"), arm: existsW, change: del("/k"), wantState: "absent",
			then: put("/k"), wantEvent: backends.EventCreated, wantOnPath: key},
		{name: "exists/change-after-read", afterRead: true, setup: put("/k"), arm: existsW, change: del("/k"), wantState: "exists",
			wantEvent: backends.EventDeleted, wantOnPath: key},
		{name: "children/change-before-read", setup: nothing, arm: childrenW, change: put("/a"), wantState: "[a]",
			then: del("/a"), wantEvent: backends.EventChildrenChanged, wantOnPath: dir},
		{name: "children/change-after-read", afterRead: true, setup: nothing, arm: childrenW, change: put("/a"), wantState: "[]",
			wantEvent: backends.EventChildrenChanged, wantOnPath: dir},
	} {
		t.Run(k.name, func(t *testing.T) {
			for _, hold := range slowReplies {
				if interleaved(t, k, hold) {
					return
				}
				t.Logf("the read ran before the change with replies held %v: trying a longer hold", hold)
			}
			t.Fatalf("the read ran before the change even with replies held %v", slowReplies[len(slowReplies)-1])
		})
	}
}

// watchCase is one interleaving of TestWatchSeesExactlyTheChangesAfterItsRead.
type watchCase struct {
	name       string
	afterRead  bool // change after the read (else after the registration, before the read)
	setup      func(ctx context.Context, ns string) error
	arm        func(ctx context.Context, s *etcd.Session, ns string) armed
	change     func(ctx context.Context, ns string) error
	wantState  string
	then       func(ctx context.Context, ns string) error // a later change, when the first must not fire
	wantEvent  backends.EventType
	wantOnPath func(ns string) string
}

// interleaved runs k once with the server's replies held for hold. It
// returns false, having checked nothing, when the read ran before the
// change although k wants the change first: the test's own steps took
// longer than hold.
func interleaved(t *testing.T, k watchCase, hold time.Duration) bool {
	t.Helper()
	// The proxy holds the session's keep-alive replies too: its lease
	// outlasts the longest hold twice over, or a loaded machine would
	// see the session lost before the read's reply arrives.
	b, p, ns := proxiedConfig(t, etcd.Config{LeaseTTL: 2*slowReplies[len(slowReplies)-1] + 10*time.Second})
	m, _ := open(t) // scrapes without the proxy's delay
	s := session(t, b)
	anchored(t, m, s, ns)
	ctx := ctxFor(t, 30*time.Second+2*hold)
	if err := k.setup(ctx, ns); err != nil {
		t.Fatal(err)
	}
	m0 := scrape(t, m)
	p.SetDirectionLatency(proxy.ServerToClient, hold, 0)
	res := make(chan armed, 1)
	go func() { res <- k.arm(ctx, s, ns) }()
	if k.afterRead {
		// The server has answered the read; the caller has not seen it.
		until(t, m, 10*time.Second, "read", func(now backends.Metrics) bool { return now.Delta(m0)[metricRanges] >= 1 })
	} else {
		until(t, m, 10*time.Second, "watch", func(now backends.Metrics) bool { return now.Delta(m0)[metricWatchers] >= 1 })
	}
	if err := k.change(ctx, ns); err != nil {
		t.Fatal(err)
	}
	early := !k.afterRead && scrape(t, m).Delta(m0)[metricRanges] != 0
	p.SetDirectionLatency(proxy.ServerToClient, 0, 0)
	var a armed
	select {
	case a = <-res:
	case <-ctx.Done():
		t.Fatal("the watch call did not return")
	}
	if early {
		// The read ran before the change: the delay was too short. The
		// call has returned, so its requests are not in the next try's
		// metrics; its watch must end too (the change after the read
		// fires it), or its cancel, reaching the server late on a loaded
		// machine, takes the next try's watch out of the watcher gauge.
		if a.err == nil {
			select {
			case <-a.ch:
			case <-ctx.Done():
				t.Fatal("the try's watch never fired on the change after its read")
			}
		}
		until(t, m, 10*time.Second, "end of the try's watch", func(now backends.Metrics) bool { return now.Delta(m0)[metricWatchers] <= 0 })
		return false
	}
	if a.err != nil || a.state != k.wantState {
		t.Fatalf("read %s, %v; want %s", a.state, a.err, k.wantState)
	}
	if k.then != nil {
		quiet(t, a.ch, 500*time.Millisecond) // the change is in the read
		if err := k.then(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	if ev := event(t, a.ch, 10*time.Second); ev.Type != k.wantEvent || ev.Path != k.wantOnPath(ns) {
		t.Fatalf("event %+v, want %s on %s", ev, k.wantEvent, k.wantOnPath(ns))
	}
	if _, more := <-a.ch; more {
		t.Fatal("a second event on a one-shot watch")
	}
	// The watch's cancel reaches the server after the channel closes: wait
	// for it, so that the next case's baseline does not carry it.
	until(t, m, 10*time.Second, "end of the watch", func(now backends.Metrics) bool { return now.Delta(m0)[metricWatchers] <= 0 })
	return true
}

// watchCreates records the start revision of every watch create request
// the clients it is dialled into send.
type watchCreates struct {
	mu   sync.Mutex
	revs []int64
}

func (w *watchCreates) all() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.revs)
}

func (w *watchCreates) interceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != "/etcdserverpb.Watch/Watch" {
		return cs, err
	}
	return &watchCreateStream{ClientStream: cs, w: w}, nil
}

type watchCreateStream struct {
	grpc.ClientStream
	w *watchCreates
}

func (s *watchCreateStream) SendMsg(m any) error {
	if r, ok := m.(*pb.WatchRequest); ok && r.GetCreateRequest() != nil {
		s.w.mu.Lock()
		s.w.revs = append(s.w.revs, r.GetCreateRequest().StartRevision)
		s.w.mu.Unlock()
	}
	return s.ClientStream.SendMsg(m)
}

// ExistsW and ChildrenW register their watch at the store's current
// revision, even while other keys are being written: the create request
// carries no start revision, so etcd (mvcc watchableStore.watch) registers
// the watcher as synced and notifies it on the write itself. A watch from
// an older revision would be unsynced and wait for etcd's 100 ms resync;
// how long a watch takes to fire is BenchmarkWatchFireLatency's to measure.
func TestWatchRegisteredAtCurrentRevision(t *testing.T) {
	creates := &watchCreates{}
	b, ns := open(t, etcd.WithDialOptions(grpc.WithChainStreamInterceptor(creates.interceptor)))
	s := session(t, b)
	anchored(t, b, s, ns)
	c := direct(t)
	ctx := ctxFor(t, 60*time.Second)
	stop := writeNoise(ctx, c, ns)
	defer stop()

	const rounds = 10
	for i := range rounds {
		before := len(creates.all())
		ch, key := armOne(t, ctx, s, ns, i)
		if _, err := c.Put(ctx, key, "v"); err != nil {
			t.Fatal(err)
		}
		if ev := event(t, ch, 10*time.Second); ev.Type == backends.EventSessionLost {
			t.Fatalf("watch %d: %+v", i, ev)
		}
		if revs := creates.all()[before:]; len(revs) != 1 || revs[0] != 0 {
			t.Fatalf("watch %d: watch creates with start revisions %v, want one at the current revision (0)", i, revs)
		}
	}
}

// writeNoise writes to 16 keys under ns in a loop until stop is called.
func writeNoise(ctx context.Context, c *clientv3.Client, ns string) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; wctx.Err() == nil; i++ {
			c.Put(wctx, fmt.Sprintf("%s/noise/%d", ns, i%16), "x")
		}
	})
	return func() { cancel(); wg.Wait() }
}

// armOne arms watch i: an ExistsW on a key for even i, a ChildrenW on a
// folder for odd i. It returns the watch and the key whose creation fires it.
func armOne(tb testing.TB, ctx context.Context, s *etcd.Session, ns string, i int) (<-chan backends.Event, string) {
	tb.Helper()
	if i%2 == 0 {
		key := fmt.Sprintf("%s/k%d", ns, i)
		_, _, ch, err := s.ExistsW(ctx, key)
		if err != nil {
			tb.Fatal(err)
		}
		return ch, key
	}
	_, ch, err := s.ChildrenW(ctx, ns+"/dir")
	if err != nil {
		tb.Fatal(err)
	}
	return ch, fmt.Sprintf("%s/dir/c%d", ns, i)
}

// BenchmarkWatchFireLatency times, amid writes to other keys, how long
// after a write the watch armed on its key fires: milliseconds, as a synced
// watcher is notified on the write; about 50 ms on average when the watcher
// waits for etcd's 100 ms resync. It reports the median and the share of
// watches slower than 40 ms, and fails when that share passes a fifth.
// Timings, so a benchmark (make bench), run on a quiet machine.
func BenchmarkWatchFireLatency(b *testing.B) {
	be, ns := open(b)
	s := session(b, be)
	c := direct(b)
	ctx := ctxFor(b, 10*time.Minute)
	stop := writeNoise(ctx, c, ns)
	defer stop()

	const slow = 40 * time.Millisecond
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		ch, key := armOne(b, ctx, s, ns, i)
		start := time.Now()
		if _, err := c.Put(ctx, key, "v"); err != nil {
			b.Fatal(err)
		}
		event(b, ch, 10*time.Second)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	late := len(lat) - sort.Search(len(lat), func(i int) bool { return lat[i] > slow })
	b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/float64(time.Millisecond), "max-ms")
	b.ReportMetric(float64(late)/float64(len(lat)), "share-over-40ms")
	if late > len(lat)/5 {
		b.Errorf("%d of %d watches fired more than %v after the write (median %v): registered at an older revision?", late, len(lat), slow, lat[len(lat)/2])
	}
}

// ExistsW and ChildrenW cost one watch create and one read each. Cancelling
// their ctx closes their channels without an event and removes their watchers from the server at once: later writes
// to the keys they watched send nothing.
func TestCancelledWatchesLeaveTheServer(t *testing.T) {
	b, ns := open(t)
	s := session(t, b)
	anchored(t, b, s, ns)
	c := direct(t)
	ctx := ctxFor(t, 30*time.Second)
	m0 := scrape(t, b)
	wctx, cancel := context.WithCancel(ctx)
	var chs []<-chan backends.Event
	for i := range 3 {
		_, _, ch, err := s.ExistsW(wctx, fmt.Sprintf("%s/k%d", ns, i))
		if err != nil {
			t.Fatal(err)
		}
		chs = append(chs, ch)
	}
	for i := range 2 {
		_, ch, err := s.ChildrenW(wctx, fmt.Sprintf("%s/d%d", ns, i))
		if err != nil {
			t.Fatal(err)
		}
		chs = append(chs, ch)
	}
	until(t, b, 10*time.Second, "5 new watchers", func(m backends.Metrics) bool { return m.Delta(m0)[metricWatchers] >= 5 })
	m1 := scrape(t, b)
	// One watch create and one read per call.
	if d := m1.Delta(m0); d[metricRanges] != 5 || d[metricWatchMessages] != 5 {
		t.Errorf("5 calls: %v reads and %v watch requests, want 5 and 5", d[metricRanges], d[metricWatchMessages])
	}

	cancel()
	start := time.Now()
	for _, ch := range chs {
		select {
		case ev, ok := <-ch:
			if ok {
				t.Fatalf("cancelled watch delivered %+v", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("cancelled watch still open %v after the cancel", time.Since(start))
		}
	}
	until(t, b, 10*time.Second, "cancelled watchers gone", func(m backends.Metrics) bool { return m.Delta(m1)[metricWatchers] <= -5 })
	t.Logf("server dropped the 5 watchers %v after cancel", time.Since(start).Round(time.Millisecond))

	m2 := scrape(t, b)
	for i := range 3 {
		if _, err := c.Put(ctx, fmt.Sprintf("%s/k%d", ns, i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if _, err := c.Put(ctx, fmt.Sprintf("%s/d%d/x", ns, i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if d := scrape(t, b).Delta(m2)[backends.MetricWatchEvents]; d != 0 {
		t.Errorf("server sent %v watch events for writes to keys whose watches were cancelled", d)
	}
}

// ChildrenW, like ZooKeeper's, fires on a child's creation or deletion,
// not on a new value or on deeper keys.
func TestChildrenWIgnoresValueChanges(t *testing.T) {
	b, ns := open(t)
	s := session(t, b)
	c := direct(t)
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Put(ctx, ns+"/a", "1"); err != nil {
		t.Fatal(err)
	}
	kids, ch, err := s.ChildrenW(ctx, ns)
	if err != nil || len(kids) != 1 {
		t.Fatalf("ChildrenW = %v %v", kids, err)
	}
	if _, err := c.Put(ctx, ns+"/a", "2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, ns+"/a/deeper", "x"); err != nil {
		t.Fatal(err)
	}
	quiet(t, ch, 500*time.Millisecond)
	if _, err := c.Delete(ctx, ns+"/a"); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, ch, 10*time.Second); ev.Type != backends.EventChildrenChanged {
		t.Fatalf("event %+v", ev)
	}
}

// A watch that loses its connection resumes, once reconnected, from the
// revision after the last it saw. When those revisions were compacted
// meanwhile, it re-reads: it fires if the node changed, and otherwise
// watches on from the new read without a spurious event.
func TestWatchCompactedWhileDisconnected(t *testing.T) {
	b, p, ns := proxied(t)
	s := session(t, b)
	c := direct(t)
	ctx := ctxFor(t, 30*time.Second)
	changed, same := ns+"/changed", ns+"/same"
	for _, k := range []string{changed, same} {
		if _, err := c.Put(ctx, k, "v1"); err != nil {
			t.Fatal(err)
		}
	}
	_, _, chChanged, err := s.ExistsW(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	_, _, chSame, err := s.ExistsW(ctx, same)
	if err != nil {
		t.Fatal(err)
	}
	// Hold every byte from here on, and drop the connection: the change
	// below never reaches the watch as an event.
	p.Cut()
	p.ResetAll()
	if _, err := c.Put(ctx, changed, "v2"); err != nil {
		t.Fatal(err)
	}
	r, err := c.Put(ctx, ns+"/unrelated", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, r.Header.Revision); err != nil {
		t.Fatal(err)
	}
	p.Restore()

	if ev := event(t, chChanged, 10*time.Second); ev.Type != backends.EventDataChanged {
		t.Fatalf("compacted watch on a changed key: %+v, want data-changed", ev)
	}
	quiet(t, chSame, 500*time.Millisecond)
	if _, err := c.Delete(ctx, same); err != nil {
		t.Fatal(err)
	}
	if ev := event(t, chSame, 10*time.Second); ev.Type != backends.EventDeleted {
		t.Fatalf("re-armed watch: %+v, want deleted", ev)
	}
}
