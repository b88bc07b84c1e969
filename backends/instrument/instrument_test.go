package instrument_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
)

func TestOpNamesMatchResultsKeys(t *testing.T) {
	want := []string{"create", "create_seq", "get", "delete", "children", "ensure_path", "exists_w", "children_w", "enqueue", "predecessor", "tagged", "dequeue", "set", "watch_data", "update", "set_if", "commit", "children_v"}
	ops := instrument.Ops()
	if len(ops) != len(want) {
		t.Fatalf("Ops() has %d types, want %d", len(ops), len(want))
	}
	for i, op := range ops {
		if op.String() != want[i] {
			t.Errorf("op %d is %q, want %q", i, op, want[i])
		}
	}
	if got := instrument.Op(99).String(); got != "unknown" {
		t.Errorf("Op(99) = %q", got)
	}
}

// The names a backend received to answer a predecessor query (Node.Listed:
// ZooKeeper lists the parent) are bytes received, which the instrument
// cannot see in the answer itself.
func TestPredecessorCountsListedBytes(t *testing.T) {
	ctx := context.Background()
	stub := newStub()
	stub.listed = 40
	var c instrument.Counters
	s := instrument.Wrap(stub, &c)
	s.Predecessor(ctx, "/p", backends.Node{Path: "/p/1", Seq: 1}, "")
	s.PredecessorOf(ctx, "/p", "w-", backends.Node{Path: "/p/1", Seq: 1})
	if got := c.Snapshot().BytesReceived; got != 80 {
		t.Errorf("bytes received = %d, want the 2 x 40 the backend listed", got)
	}
}

func TestCountsEveryRequestAndFailure(t *testing.T) {
	ctx := context.Background()
	stub := newStub()
	var c instrument.Counters
	s := instrument.Wrap(stub, &c)

	call := func() {
		s.Create(ctx, "/a", nil)
		s.CreateSequential(ctx, "/p", "n-", nil)
		s.CreateSequential(ctx, "/p", "n-", nil)
		s.Get(ctx, "/a")
		s.Delete(ctx, "/a")
		s.Children(ctx, "/p")
		s.EnsurePath(ctx, "/p")
		s.ExistsW(ctx, "/a")
		s.ChildrenW(ctx, "/p")
		s.Enqueue(ctx, "/p", "t")
		s.Predecessor(ctx, "/p", backends.Node{Path: "/p/1", Seq: 1}, "")
		s.PredecessorOf(ctx, "/p", "w-", backends.Node{Path: "/p/1", Seq: 1})
		s.Tagged(ctx, "/p", "t")
		s.Dequeue(ctx, backends.Node{Path: "/p/1", Seq: 1})
		s.Set(ctx, "/c", []byte("v"))
		// The stub is no DataWatcher: refused, nothing sent, nothing counted.
		if _, _, _, err := s.WatchData(ctx, "/c"); !errors.Is(err, backends.ErrNoDataWatch) {
			t.Errorf("WatchData on a session without the ability: %v", err)
		}
		s.Update(ctx, "/a", []byte("unlock"))
		s.SetIf(ctx, "/h", nil, []backends.Write{{Path: "/a", Data: []byte("1")}, {Path: "/h", Data: []byte("1")}})
		s.ChildrenVersion(ctx, "/p")
		s.Commit(ctx, backends.Check("/p", 1), backends.CreateIn("/p", "i-", []byte("x")))
	}
	call()
	stub.err = errStub
	call()

	got := c.Snapshot()
	want := map[string]int64{"create": 2, "create_seq": 4, "get": 2, "delete": 2, "children": 2,
		"ensure_path": 2, "exists_w": 2, "children_w": 2, "enqueue": 2, "predecessor": 4, "tagged": 2, "dequeue": 2,
		"update": 2, "set": 2, "watch_data": 0, "set_if": 2, "children_v": 2, "commit": 2}
	wantFail := map[string]int64{"create": 1, "create_seq": 2, "get": 1, "delete": 1, "children": 1,
		"ensure_path": 1, "exists_w": 1, "children_w": 1, "enqueue": 1, "predecessor": 2, "tagged": 1, "dequeue": 1,
		"update": 1, "set": 1, "watch_data": 0, "set_if": 1, "children_v": 1, "commit": 1}
	for k, v := range want {
		if got.Requests[k] != v {
			t.Errorf("Requests[%q] = %d, want %d", k, got.Requests[k], v)
		}
		if got.Failures[k] != wantFail[k] {
			t.Errorf("Failures[%q] = %d, want %d", k, got.Failures[k], wantFail[k])
		}
	}
	if len(got.Requests) != len(want) || len(got.Failures) != len(want) {
		t.Errorf("snapshot has %d request and %d failure keys, want %d", len(got.Requests), len(got.Failures), len(want))
	}
	if got.TotalRequests() != 38 {
		t.Errorf("TotalRequests = %d, want 38", got.TotalRequests())
	}
	// Only the two successful watch calls armed a watch.
	if got.WatchesArmed != 2 {
		t.Errorf("WatchesArmed = %d, want 2", got.WatchesArmed)
	}
	if c.Requests(instrument.OpCreateSeq) != 4 {
		t.Errorf("Requests(OpCreateSeq) = %d", c.Requests(instrument.OpCreateSeq))
	}
}

// TestWatchForwarding checks events are counted on arrival from the backend,
// session-lost apart, and the relay goroutine ends when the backend closes
// the channel, with or without an event.
func TestWatchForwarding(t *testing.T) {
	ctx := context.Background()
	stub := newStub()
	stub.watches = make(chan chan backends.Event, 3)
	var c instrument.Counters
	s := instrument.Wrap(stub, &c)

	before := runtime.NumGoroutine()
	chs := []chan backends.Event{make(chan backends.Event, 1), make(chan backends.Event, 1), make(chan backends.Event, 1)}
	for _, ch := range chs {
		stub.watches <- ch
	}
	_, _, w1, err := s.ExistsW(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	_, w2, err := s.ChildrenW(ctx, "/p")
	if err != nil {
		t.Fatal(err)
	}
	_, _, w3, err := s.ExistsW(ctx, "/b")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot(); got.WatchesArmed != 3 || got.WatchEvents != 0 || c.OpenWatches() != 3 {
		t.Fatalf("after arming: %+v, %d open", got, c.OpenWatches())
	}

	chs[0] <- backends.Event{Type: backends.EventDeleted, Path: "/a"}
	close(chs[0])
	// Counted on arrival, before it is in w1: whoever received it finds it
	// counted, with no wait.
	ev := <-w1
	if ev.Type != backends.EventDeleted || ev.Path != "/a" {
		t.Fatalf("w1 gave %+v", ev)
	}
	if got := c.Snapshot().WatchEvents; got != 1 {
		t.Fatalf("WatchEvents = %d once the event was received, want 1", got)
	}
	// The watch ends before w1 closes: whoever finds it closed finds it
	// ended.
	if ev, ok := <-w1; ok {
		t.Fatalf("w1 gave %+v after its event, want closed", ev)
	}
	if n := c.OpenWatches(); n != 2 {
		t.Fatalf("%d watches open once w1 closed, want 2", n)
	}

	chs[1] <- backends.Event{Type: backends.EventSessionLost}
	close(chs[1])
	if ev := <-w2; ev.Type != backends.EventSessionLost {
		t.Fatalf("w2 gave %+v", ev)
	}
	if got := c.Snapshot().SessionLostEvents; got != 1 {
		t.Fatalf("SessionLostEvents = %d once the event was received, want 1", got)
	}
	// Closed without an event, as when the watch's ctx ends.
	close(chs[2])
	if ev, ok := <-w3; ok {
		t.Fatalf("w3 gave %+v, want closed", ev)
	}
	got := c.Snapshot()
	if got.WatchEvents != 1 || got.SessionLostEvents != 1 || got.WatchesArmed != 3 {
		t.Errorf("counts = %+v", got)
	}
	if n := c.OpenWatches(); n != 0 {
		t.Errorf("%d watches open after every channel closed", n)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

// TestUnreadWatchDoesNotLeak: a caller that never reads its watch channel
// does not keep the relay goroutine alive.
func TestUnreadWatchDoesNotLeak(t *testing.T) {
	ctx := context.Background()
	var c instrument.Counters
	s := instrument.Wrap(newStub(), &c)
	before := runtime.NumGoroutine()
	for range 100 {
		if _, _, _, err := s.ExistsW(ctx, "/a"); err != nil {
			t.Fatal(err)
		}
	}
	// No watch open: every relay has counted its event and ended.
	waitFor(t, func() bool { return c.OpenWatches() == 0 })
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
	if got := c.Snapshot().WatchEvents; got != 100 {
		t.Errorf("WatchEvents = %d, want 100", got)
	}
}

func TestRegistryTotalsAndConcurrency(t *testing.T) {
	ctx := context.Background()
	r := instrument.NewRegistry()
	b := instrument.WrapBackend(stubBackend{}, r)
	const clients, perClient = 8, 1000
	var wg sync.WaitGroup
	for i := range clients {
		s, err := b.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perClient * (i + 1) {
				s.Get(ctx, "/a")
			}
			s.Delete(ctx, "/a")
			instrument.CountersOf(s).AddWastedWakeups(2)
		}()
	}
	wg.Wait()
	if r.Len() != clients {
		t.Fatalf("Len = %d", r.Len())
	}
	per := r.PerClient()
	var sum instrument.Counts
	for i, c := range per {
		if c.Requests["get"] != int64(perClient*(i+1)) {
			t.Errorf("client %d gets = %d, want %d", i, c.Requests["get"], perClient*(i+1))
		}
		sum = sum.Add(c)
	}
	total := r.Total()
	wantGets := int64(perClient * clients * (clients + 1) / 2)
	if total.Requests["get"] != wantGets || sum.Requests["get"] != wantGets {
		t.Errorf("total gets = %d, sum of clients = %d, want %d", total.Requests["get"], sum.Requests["get"], wantGets)
	}
	if total.Requests["delete"] != clients || total.WastedWakeups != 2*clients {
		t.Errorf("total = %+v", total)
	}
	d := total.Sub(per[0])
	if d.Requests["get"] != wantGets-perClient || d.WastedWakeups != 2*clients-2 {
		t.Errorf("Sub = %+v", d)
	}
}

// A remote client's reports join the totals, the latest replacing the one
// before; once lost, its unseen calls are calls in flight.
func TestRegistryRemoteClients(t *testing.T) {
	ctx := context.Background()
	r := instrument.NewRegistry()
	s, err := instrument.WrapBackend(stubBackend{}, r).NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Get(ctx, "/a")
	m := r.NewRemote()
	if got := r.Total().Requests["get"]; got != 1 {
		t.Fatalf("before any report: %d gets, want this process's 1", got)
	}
	report := func(gets int64) instrument.Counts {
		return instrument.Counts{Requests: map[string]int64{"get": gets}, WatchEvents: gets / 2}
	}
	m.Report(report(4), backends.Witness{SessionWrites: 1})
	m.Report(report(10), backends.Witness{SessionWrites: 1, RefusedWrites: 3})
	total := r.Total()
	if total.Requests["get"] != 11 || total.WatchEvents != 5 || total.InFlight["get"] != 0 {
		t.Errorf("after two reports: %+v, want 1+10 gets, 5 watch events, none in flight", total)
	}
	if w := r.RemoteWitness(); w.SessionWrites != 1 || w.RefusedWrites != 3 {
		t.Errorf("remote witness %+v, want the last report's", w)
	}
	if r.Len() != 1 {
		t.Errorf("Len %d: want the clients of this process only", r.Len())
	}
	m.Lost(map[string]int64{"get": 2})
	if total := r.Total(); total.Requests["get"] != 11 || total.InFlight["get"] != 2 {
		t.Errorf("lost: %+v, want 11 gets and 2 in flight", total)
	}
}

func TestWrapBackendKeepsOptionalInterfaces(t *testing.T) {
	cases := []struct {
		name           string
		b              backends.Backend
		admin, scraper bool
	}{
		{"plain", stubBackend{}, false, false},
		{"admin", stubAdmin{}, true, false},
		{"scraper", stubScraper{}, false, true},
		{"both", stubBoth{}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := instrument.WrapBackend(tc.b, instrument.NewRegistry())
			a, isAdmin := w.(backends.Admin)
			sc, isScraper := w.(backends.Scraper)
			if isAdmin != tc.admin || isScraper != tc.scraper {
				t.Fatalf("admin=%v scraper=%v, want %v %v", isAdmin, isScraper, tc.admin, tc.scraper)
			}
			if isAdmin {
				if l, err := a.List(context.Background(), "/zkbench/x"); err != nil || len(l) != 1 {
					t.Errorf("List = %v, %v", l, err)
				}
			}
			if isScraper {
				if m, err := sc.Scrape(context.Background()); err != nil || m["x"] != 1 {
					t.Errorf("Scrape = %v, %v", m, err)
				}
			}
			if instrument.UnwrapBackend(w) != tc.b {
				t.Error("UnwrapBackend did not return the inner backend")
			}
			if w.Kind() != "stub" {
				t.Errorf("Kind = %q", w.Kind())
			}
		})
	}
}

func TestUnwrapAndCountersOf(t *testing.T) {
	stub := newStub()
	var c1, c2 instrument.Counters
	inner := instrument.Wrap(stub, &c1)
	outer := instrument.Wrap(inner, &c2)
	if instrument.Unwrap(outer) != stub {
		t.Error("Unwrap did not reach the innermost session")
	}
	if outer.Unwrap() != inner {
		t.Error("method Unwrap must peel one layer")
	}
	if instrument.Unwrap(stub) != stub {
		t.Error("Unwrap of an unwrapped session must return it")
	}
	if instrument.CountersOf(outer) != &c2 || instrument.CountersOf(stub) != nil {
		t.Error("CountersOf picked the wrong counters")
	}
	// Both layers count.
	outer.Get(context.Background(), "/a")
	if c1.Requests(instrument.OpGet) != 1 || c2.Requests(instrument.OpGet) != 1 {
		t.Error("nested wrappers must both count")
	}
	if outer.ID() != 42 || outer.Done() != stub.done || outer.Close() != nil {
		t.Error("ID, Done or Close not passed through")
	}
}

func TestErrorsPassThroughUnchanged(t *testing.T) {
	stub := newStub()
	stub.err = backends.ErrNoNode
	s := instrument.Wrap(stub, new(instrument.Counters))
	if _, _, err := s.Get(context.Background(), "/a"); !errors.Is(err, backends.ErrNoNode) {
		t.Errorf("err = %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// lateStub is a stub session that counts late watch events, as a backend
// implementing backends.LateWatchCounter does.
type lateStub struct {
	*stubSession
	late atomic.Int64
}

func (s *lateStub) LateWatchEvents() int64 { return s.late.Load() }

// decorated is a session decorator that only forwards, with Unwrap.
type decorated struct{ backends.Session }

func (d decorated) Unwrap() backends.Session { return d.Session }

func TestLateWatchEventsFromTheSession(t *testing.T) {
	r := instrument.NewRegistry()
	c1, c2 := r.NewClient(), r.NewClient()
	a, b := &lateStub{stubSession: newStub()}, &lateStub{stubSession: newStub()}
	sa := instrument.Wrap(a, c1)
	sb := instrument.Wrap(decorated{b}, c2) // found through the decorator's Unwrap
	instrument.Wrap(newStub(), c2)          // a session without late events adds none

	a.late.Add(2)
	b.late.Add(3)
	if got := c1.Snapshot().LateWatchEvents; got != 2 {
		t.Errorf("client 1 LateWatchEvents = %d, want 2", got)
	}
	before := r.Total()
	if before.LateWatchEvents != 5 || before.WatchEvents != 0 {
		t.Fatalf("Total = %+v, want 5 late watch events and no watch event", before)
	}
	// After Close the final count stays, and the session is no longer read.
	b.late.Add(1)
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	b.late.Add(100)
	sb.Close() // twice: folded once
	a.late.Add(1)
	total := r.Total()
	if total.LateWatchEvents != 7 {
		t.Fatalf("Total LateWatchEvents = %d, want 7 (3 from a, 4 final from b)", total.LateWatchEvents)
	}
	d := total.Sub(before)
	if d.LateWatchEvents != 2 {
		t.Errorf("Sub = %d, want 2", d.LateWatchEvents)
	}
	if sum := r.PerClient()[0].Add(r.PerClient()[1]); sum.LateWatchEvents != 7 {
		t.Errorf("per-client sum = %d, want 7", sum.LateWatchEvents)
	}
	if err := sa.Close(); err != nil || c1.Snapshot().LateWatchEvents != 3 {
		t.Errorf("client 1 after Close: %d (%v), want 3", c1.Snapshot().LateWatchEvents, err)
	}
}

// Payload bytes: paths and data sent, data read, names listed and watch
// events' paths and data received, on the stub whose answers the test
// knows.
func TestCountsPayloadBytes(t *testing.T) {
	var c instrument.Counters
	stub := &listingStub{stubSession: newStub(), kids: []backends.Node{{Name: "n-0001"}, {Name: "n-0002"}}, data: []byte("0123456789")}
	s := instrument.Wrap(stub, &c)
	ctx := context.Background()
	s.Create(ctx, "/a/b", []byte("xyz"))            // 4 + 3 sent
	s.CreateSequential(ctx, "/a", "n-", []byte("")) // 2 + 1 + 2 sent
	s.Get(ctx, "/a/b")                              // 4 sent, 10 received
	s.Children(ctx, "/a")                           // 2 sent, 12 received
	s.Delete(ctx, "/a/b")                           // 4 sent
	s.EnsurePath(ctx, "/a/c")                       // 4 sent
	_, _, ch, _ := s.ExistsW(ctx, "/a/b")           // 4 sent; the event's path and data received
	for range ch {
	}
	got := c.Snapshot()
	if got.BytesSent != 7+5+4+2+4+4+4 || got.BytesReceived != 10+12+int64(len("/a/b")+len("new")) {
		t.Fatalf("bytes sent %d, received %d; want 30 and 29", got.BytesSent, got.BytesReceived)
	}
	// A queue's calls send the paths they name, as the plain calls do.
	me := backends.Node{Path: "/q/t-0001", Seq: 1}
	s.Enqueue(ctx, "/q", "t")            // 2 + 1 + 1
	s.Predecessor(ctx, "/q", me, "")     // 2
	s.PredecessorOf(ctx, "/q", "t-", me) // 2 + 1 + 2
	s.Tagged(ctx, "/q", "t")             // 2 + 1 + 1
	s.Dequeue(ctx, me)                   // 9
	if d := c.Snapshot().Sub(got); d.BytesSent != 4+2+5+4+9 {
		t.Fatalf("a queue's calls sent %d bytes, want 24", d.BytesSent)
	}
	got = c.Snapshot()
	stub.err = errStub
	s.Get(ctx, "/a/b") // a failure sends its path and receives nothing
	if d := c.Snapshot().Sub(got); d.BytesSent != 4 || d.BytesReceived != 0 {
		t.Fatalf("failed Get: bytes %+v", d)
	}
}

// listingStub answers Children with kids, Get with data and ExistsW with an
// event on its path.
type listingStub struct {
	*stubSession
	kids []backends.Node
	data []byte
}

func (s *listingStub) Children(ctx context.Context, parent string) ([]backends.Node, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.kids, nil
}

func (s *listingStub) Get(ctx context.Context, path string) ([]byte, backends.Node, error) {
	if s.err != nil {
		return nil, backends.Node{}, s.err
	}
	return s.data, backends.Node{Path: path}, nil
}

func (s *listingStub) ExistsW(ctx context.Context, path string) (bool, backends.Node, <-chan backends.Event, error) {
	ch := make(chan backends.Event, 1)
	ch <- backends.Event{Type: backends.EventDataChanged, Path: path, Data: []byte("new")}
	close(ch)
	return true, backends.Node{Path: path}, ch, nil
}

// TestUpdateWithoutUpdater: Update through the instrument on a session that cannot
// set data fails with errors.ErrUnsupported, counted as a failed set.
func TestUpdateWithoutUpdater(t *testing.T) {
	var c instrument.Counters
	s := instrument.Wrap(struct{ backends.Session }{newStub()}, &c)
	if err := s.Update(context.Background(), "/a", nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Update = %v, want errors.ErrUnsupported", err)
	}
	if got := c.Snapshot(); got.Requests["update"] != 1 || got.Failures["update"] != 1 {
		t.Fatalf("set counted %d requests, %d failures; want 1 and 1", got.Requests["update"], got.Failures["update"])
	}
}

// TestSetIfWithoutTransactor: SetIf through the instrument on a session that
// cannot write in a transaction fails with errors.ErrUnsupported, counted
// as a failed set_if.
func TestSetIfWithoutTransactor(t *testing.T) {
	var c instrument.Counters
	s := instrument.Wrap(struct{ backends.Session }{newStub()}, &c)
	if ok, err := s.SetIf(context.Background(), "/h", nil, nil); ok || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("SetIf = %v, %v, want errors.ErrUnsupported", ok, err)
	}
	if got := c.Snapshot(); got.Requests["set_if"] != 1 || got.Failures["set_if"] != 1 {
		t.Fatalf("set_if counted %d requests, %d failures; want 1 and 1", got.Requests["set_if"], got.Failures["set_if"])
	}
}

// blockingCreate is a stub whose Create waits for release: a call in flight.
type blockingCreate struct {
	*stubSession
	release chan struct{}
}

func (b blockingCreate) Create(ctx context.Context, path string, data []byte) (backends.Node, error) {
	<-b.release
	return b.stubSession.Create(ctx, path, data)
}

// A call is in flight from the moment it is counted to its answer: the
// servers may or may not have counted it when they are read meanwhile.
// Between two snapshots, each end's calls in flight add up.
func TestCountsCallsInFlight(t *testing.T) {
	ctx := context.Background()
	b := blockingCreate{newStub(), make(chan struct{})}
	reg := instrument.NewRegistry()
	c := reg.NewClient()
	s := instrument.Wrap(b, c)
	before := c.Snapshot()
	done := make(chan struct{})
	go func() { s.Create(ctx, "/a", nil); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for c.Snapshot().InFlight["create"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a blocked create is not counted in flight")
		}
		time.Sleep(time.Millisecond)
	}
	mid := c.Snapshot()
	if got := reg.Total().InFlight["create"]; got != 1 {
		t.Errorf("the registry's total has %d creates in flight, want 1: the meter reads the clients through it", got)
	}
	if got := mid.Sub(before).InFlight["create"]; got != 1 {
		t.Errorf("in flight between an idle snapshot and a busy one: %d, want 1", got)
	}
	close(b.release)
	<-done
	after := c.Snapshot()
	if after.InFlight["create"] != 0 || after.Requests["create"] != 1 {
		t.Errorf("after the answer: in flight %d, requests %d; want 0 and 1", after.InFlight["create"], after.Requests["create"])
	}
	if got := after.Sub(mid).InFlight["create"]; got != 1 {
		t.Errorf("in flight between a busy snapshot and an idle one: %d, want 1 (a bound at each end)", got)
	}
	s.Get(ctx, "/a")
	if got := c.Snapshot().InFlight["get"]; got != 0 {
		t.Errorf("an answered get is still in flight: %d", got)
	}
}

// TestRefusedCallsAreNotRequests: a call the backend refuses before any
// request goes out (ctx already ended, or the session over) is not counted
// as a request, a failure or bytes sent: the servers never see it, and a
// client|server comparison would otherwise carry the difference.
func TestRefusedCallsAreNotRequests(t *testing.T) {
	stub := newStub()
	stub.err = backends.ErrSessionLost
	var c instrument.Counters
	s := instrument.Wrap(stub, &c)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	s.Create(ended, "/a", []byte("data"))
	s.Set(ended, "/a", []byte("data"))
	if got := c.Snapshot(); got.TotalRequests() != 0 || got.BytesSent != 0 || got.Failures["create"] != 0 {
		t.Errorf("calls with an ended ctx counted: %d requests, %d bytes, %d failures", got.TotalRequests(), got.BytesSent, got.Failures["create"])
	}
	s.Get(context.Background(), "/a")
	if got := c.Snapshot(); got.Requests["get"] != 1 || got.Failures["get"] != 1 || got.BytesSent != 2 {
		t.Errorf("a call on a live session: %d requests, %d failures, %d bytes; want 1, 1, 2", got.Requests["get"], got.Failures["get"], got.BytesSent)
	}
	close(stub.done)
	s.Get(context.Background(), "/a")
	s.Delete(context.Background(), "/a")
	if got := c.Snapshot(); got.TotalRequests() != 1 || got.Failures["get"] != 1 || got.BytesSent != 2 || got.InFlight["get"] != 0 {
		t.Errorf("calls on a session over counted: %+v", got)
	}
}
