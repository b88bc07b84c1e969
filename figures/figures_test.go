package figures

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/backends"
)

func TestKeysAreUniqueAndCounterpartsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range All() {
		if seen[f.Key] {
			t.Errorf("key %q declared twice", f.Key)
		}
		seen[f.Key] = true
		if f.Label == "" || f.Doc == "" {
			t.Errorf("%s: label and doc must be set", f.Key)
		}
		if f.Kind == PerOp && f.Side == Neither {
			t.Errorf("%s: a per-operation count has a side", f.Key)
		}
		if (f.Side == Server) != (f.Metric != "") {
			t.Errorf("%s: a server figure, and only one, names its server metric", f.Key)
		}
		if f.Counterpart != "" {
			c, ok := ByKey(f.Counterpart)
			if !ok || c.Counterpart != f.Key || c.Side == f.Side {
				t.Errorf("%s: counterpart %q is not its other side", f.Key, f.Counterpart)
			}
		}
	}
}

func TestUnits(t *testing.T) {
	if got := Throughput.Unit(Acquisition); got != "acquisitions/s" {
		t.Errorf("throughput unit %q", got)
	}
	if got := WatchEvents.Header(Round); got != "watch events (client) (per round)" {
		t.Errorf("header %q", got)
	}
	if got := P99.ForLatency("acquire"); got.Label != "p99 acquire" || got.ID() != "p99" || got.Unit(Round) != "ms" {
		t.Errorf("p99 of acquire: %+v", got)
	}
	if WatchEvents.ID() != "watch_events/op" {
		t.Errorf("ID %q", WatchEvents.ID())
	}
}

func TestFittedOrder(t *testing.T) {
	var ids []string
	for _, f := range Fitted() {
		ids = append(ids, f.ID())
	}
	want := "watch_events/op server_watch_events/op wasted_wakeups/op requests/op server_requests/op server_writes/op bytes_received/op server_bytes_sent/op p99 throughput"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("fitted %s\nwant    %s", got, want)
	}
}

func TestRequestTypes(t *testing.T) {
	f := RequestsOf("exists_w")
	if f.Key != "requests.exists_w" || f.Side != Client {
		t.Fatalf("%+v", f)
	}
	if typ, ok := RequestType(f.Key); !ok || typ != "exists_w" {
		t.Errorf("RequestType(%q) = %q, %v", f.Key, typ, ok)
	}
	if g, ok := ByKey(f.Key); !ok || g.Label != f.Label {
		t.Errorf("ByKey(%q) = %+v, %v", f.Key, g, ok)
	}
	if _, ok := RequestType("requests"); ok {
		t.Error(`"requests" is not a request type's key`)
	}
}

func TestCheckNote(t *testing.T) {
	watch := backends.Metrics{backends.MetricWatchEvents: 18242}
	writes := backends.Metrics{backends.MetricWrites: 130}
	events := func(n int64) Totals { return Totals{WatchEvents: n} }
	wire := func(delivered, onWire int64) Totals {
		return Totals{WatchEvents: delivered, Witness: &backends.Witness{WireWatchEvents: onWire}}
	}
	zkWrites := func(ensurePath int64, w *backends.Witness) Totals {
		return Totals{Requests: map[string]int64{"create": 40, "create_seq": 20, "delete": 40, "ensure_path": ensurePath}, Witness: w}
	}
	herd := func(inFlight int64) Totals {
		return Totals{Requests: map[string]int64{"create": 10144, "delete": 144}, InFlight: map[string]int64{"create": inFlight, "exists_w": 900},
			Witness: &backends.Witness{RefusedWrites: 10095}}
	}
	withInFlight := func(t Totals, creates int64) Totals {
		t.InFlight = map[string]int64{"create": creates}
		return t
	}
	for _, tc := range []struct {
		name   string
		check  Check
		kind   backends.Kind
		totals Totals
		server backends.Metrics
		want   []string // substrings; nil: no note
		known  bool
	}{
		{"agree", WatchEventsCheck, backends.Etcd, events(18000), watch, nil, false},
		{"late events count", WatchEventsCheck, backends.ZooKeeper, Totals{WatchEvents: 9000, LateWatchEvents: 9100}, watch, nil, false},
		{"not scraped", WatchEventsCheck, backends.Etcd, events(5579), backends.Metrics{}, nil, false},
		{"both zero", WritesCheck, backends.Etcd, Totals{}, backends.Metrics{backends.MetricWrites: 0}, nil, false},
		{"etcd watch events, the wire accounts for the excess", WatchEventsCheck, backends.Etcd, wire(5579, 18000), watch,
			[]string{"disagree on watch events", "client 5579, server 18242, excess 12663, predicted 12421 ± 912", "known difference", "cancelled"}, true},
		{"etcd watch events beyond what reached the clients", WatchEventsCheck, backends.Etcd, wire(5579, 9000), watch,
			[]string{"excess 12663, predicted 3421 ± 912", "UNEXPLAINED", "cancelled"}, false},
		{"etcd watch events in an older file: no witness", WatchEventsCheck, backends.Etcd, events(5579), watch,
			[]string{"client 5579, server 18242, excess 12663, no client-side witness in this file", "UNEXPLAINED"}, false},
		{"zookeeper watch events: no cause", WatchEventsCheck, backends.ZooKeeper, events(5579), watch,
			[]string{"client 5579, server 18242 ("}, false},
		{"zookeeper persistent watches, the notifications read past account for the excess", WatchEventsCheck, backends.ZooKeeper,
			Totals{WatchEvents: 17000, Requests: map[string]int64{"watch_data": 5}, Witness: &backends.Witness{SkippedWatchEvents: 1200}}, watch,
			[]string{"excess 1242, predicted 1200 ± 912", "known difference", "carry no data"}, true},
		{"zookeeper persistent watches armed before the interval: the reads the witness counted say so", WatchEventsCheck, backends.ZooKeeper,
			Totals{WatchEvents: 17000, Witness: &backends.Witness{WatchReads: 18242, SkippedWatchEvents: 1200}}, watch,
			[]string{"excess 1242, predicted 1200 ± 912", "known difference", "carry no data"}, true},
		// Group membership's delta variant at 1,000 members on ZooKeeper
		// 3.8: 14 leaves, each delivered to every member once and counted
		// twice (docs/runs/watchers-membership-zookeeper).
		{"zookeeper recursive watches, each deletion counted twice", WatchEventsCheck, backends.ZooKeeper,
			Totals{WatchEvents: 14000, Witness: &backends.Witness{RecursiveDeleteEvents: 14000}}, backends.Metrics{backends.MetricWatchEvents: 28000},
			[]string{"client 14000, server 28000, excess 14000, predicted 14000 ± 1400", "known difference", "ZOOKEEPER-4466"}, true},
		{"zookeeper recursive watches, fewer deletions than the excess", WatchEventsCheck, backends.ZooKeeper,
			Totals{WatchEvents: 14000, Witness: &backends.Witness{RecursiveDeleteEvents: 7000}}, backends.Metrics{backends.MetricWatchEvents: 28000},
			[]string{"excess 14000, predicted 7000 ± 1400", "UNEXPLAINED"}, false},
		{"etcd, client above server: no cause", WatchEventsCheck, backends.Etcd, events(30000), watch,
			[]string{"client 30000, server 18242 ("}, false},
		{"zookeeper writes, EnsurePath's creates and sessions account for them", WritesCheck, backends.ZooKeeper,
			zkWrites(5, &backends.Witness{PathCreates: 26, SessionWrites: 2}), writes,
			[]string{"disagree on writes", "client 100, server 130, excess 30, predicted 28 ± 6", "EnsurePath", "session's create"}, true},
		{"zookeeper writes, another client's beside them", WritesCheck, backends.ZooKeeper,
			zkWrites(1, &backends.Witness{PathCreates: 6}), writes,
			[]string{"client 100, server 130, excess 30, predicted 6 ± 6", "UNEXPLAINED"}, false},
		{"zookeeper writes in an older file, 5 to 6 a call", WritesCheck, backends.ZooKeeper, zkWrites(5, nil), writes,
			[]string{"excess 30, predicted 25 to 30 ± 6", "known difference", "EnsurePath"}, true},
		{"zookeeper writes in an older file without EnsurePath", WritesCheck, backends.ZooKeeper,
			Totals{Requests: map[string]int64{"create": 100}}, writes,
			[]string{"client 100, server 130, excess 30, predicted 0 ± 6", "UNEXPLAINED"}, false},
		{"etcd writes, read-only transactions and leases", WritesCheck, backends.Etcd,
			Totals{Requests: map[string]int64{"create": 100, "predecessor": 40}, Witness: &backends.Witness{ReadTxns: 28, SessionWrites: 4}}, writes,
			[]string{"excess 30, predicted 32 ± 6", "read-only Txn", "lease grant"}, true},
		{"zookeeper namespace writes agree with the clients' and EnsurePath's", NamespaceWritesCheck, backends.ZooKeeper,
			zkWrites(5, &backends.Witness{PathCreates: 30, PathsCreated: 28}), backends.Metrics{backends.MetricNamespaceWrites: 130}, nil, false},
		{"zookeeper namespace writes beyond them: no cause excuses it", NamespaceWritesCheck, backends.ZooKeeper,
			zkWrites(5, &backends.Witness{PathCreates: 30, PathsCreated: 28}), backends.Metrics{backends.MetricNamespaceWrites: 200},
			[]string{"disagree on writes in zkbench's namespace", "client 128, server 200 ("}, false},
		// The naive lock at 1,000 clients: every waiter's create is sent
		// (counted) and refused (counted as the answer comes); at a read
		// a herd of them is in flight.
		{"zookeeper namespace writes, a herd in flight at the reads", NamespaceWritesCheck, backends.ZooKeeper,
			herd(100), backends.Metrics{backends.MetricNamespaceWrites: 288}, nil, false},
		{"zookeeper namespace writes beyond what was in flight", NamespaceWritesCheck, backends.ZooKeeper,
			herd(20), backends.Metrics{backends.MetricNamespaceWrites: 288},
			[]string{"client 193, server 288, 20 in flight at the reads ("}, false},
		{"zookeeper writes, calls in flight widen the model's bound", WritesCheck, backends.ZooKeeper,
			withInFlight(zkWrites(1, &backends.Witness{PathCreates: 6}), 20), writes,
			[]string{"client 100, server 130, 20 in flight at the reads, excess 30, predicted 6 ± 6", "known difference"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.check.Note(tc.kind, tc.totals, tc.server)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("note %q, want none", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("note %q lacks %q", got, w)
				}
			}
			if has := strings.Contains(got, knownMarker); has != tc.known {
				t.Errorf("note %q: gives a known cause %v, want %v", got, has, tc.known)
			}
			// A note written before the causes were modelled is modelled
			// when it is read, the same way.
			bare := tc.check.prefix() + fmt.Sprintf("by more than 5%%: client %.0f, server %.0f (%s)",
				tc.check.Client(tc.totals), tc.server[tc.check.Metric], tc.check.Metric)
			if again := Explain(bare, tc.kind, tc.totals, tc.server); again != got {
				t.Errorf("Explain(%q) = %q, want %q", bare, again, got)
			}
			if again := Explain(got, tc.kind, tc.totals, tc.server); again != got {
				t.Errorf("Explain changed a modelled note: %q", again)
			}
			// Read back, the note parts into words every case shares, the
			// case's counts and its cause.
			d, ok := ReadNote(got)
			if !ok || !strings.HasPrefix(d.Words, tc.check.prefix()) || !strings.Contains(d.Words, "("+tc.check.Metric+")") ||
				!strings.HasPrefix(d.Counts, "client ") || strings.Contains(d.Counts, "(") || (d.Cause != "") != tc.known ||
				strings.Contains(got, "UNEXPLAINED") != strings.Contains(d.Words, "UNEXPLAINED") {
				t.Errorf("ReadNote(%q) = %+v, %v", got, d, ok)
			}
		})
	}
	other := "server counters not measured: the backend has no scraper"
	if got := Explain(other, backends.Etcd, events(1), watch); got != other {
		t.Errorf("Explain changed an unrelated note: %q", got)
	}
	if d, ok := ReadNote(other); ok {
		t.Errorf("ReadNote read an unrelated note as %+v", d)
	}
}

func TestSortLatencies(t *testing.T) {
	names := []Latency{"zeta", LatencyLeave, LatencyHandoff, "alpha", LatencyAcquire, LatencyEnter}
	SortLatencies(names, []Latency{LatencyEnter, LatencyLeave, LatencyAcquire})
	if want := []Latency{LatencyEnter, LatencyLeave, LatencyAcquire, "alpha", LatencyHandoff, "zeta"}; !slices.Equal(names, want) {
		t.Errorf("sorted %v, want %v: declared first, the rest by name", names, want)
	}
}

func TestClassRank(t *testing.T) {
	order := []Class{Naive, HerdFree, Baseline, Other, ""}
	for i := 1; i < len(order); i++ {
		if order[i-1].Rank() >= order[i].Rank() {
			t.Errorf("%q ranks %d, not before %q (%d)", order[i-1], order[i-1].Rank(), order[i], order[i].Rank())
		}
	}
}
