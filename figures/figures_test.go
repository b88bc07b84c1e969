package figures

import (
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
	for _, tc := range []struct {
		name   string
		check  Check
		kind   backends.Kind
		totals Totals
		server backends.Metrics
		want   []string // substrings; nil: no note
		reason bool
	}{
		{"agree", WatchEventsCheck, backends.Etcd, events(18000), watch, nil, false},
		{"late events count", WatchEventsCheck, backends.ZooKeeper, Totals{WatchEvents: 9000, LateWatchEvents: 9100}, watch, nil, false},
		{"not scraped", WatchEventsCheck, backends.Etcd, events(5579), backends.Metrics{}, nil, false},
		{"both zero", WritesCheck, backends.Etcd, Totals{}, backends.Metrics{backends.MetricWrites: 0}, nil, false},
		{"etcd watch events, known", WatchEventsCheck, backends.Etcd, events(5579), watch,
			[]string{"disagree on watch events", "client 5579, server 18242", "known difference", "cancelled"}, true},
		{"zookeeper watch events, unexplained", WatchEventsCheck, backends.ZooKeeper, events(5579), watch,
			[]string{"client 5579, server 18242"}, false},
		{"etcd, client above server, unexplained", WatchEventsCheck, backends.Etcd, events(30000), watch,
			[]string{"client 30000, server 18242"}, false},
		{"zookeeper writes with EnsurePath, known", WritesCheck, backends.ZooKeeper,
			Totals{Requests: map[string]int64{"create": 40, "create_seq": 20, "delete": 40, "ensure_path": 10}}, writes,
			[]string{"disagree on writes", "client 100, server 130", "EnsurePath"}, true},
		{"zookeeper writes without EnsurePath, unexplained", WritesCheck, backends.ZooKeeper,
			Totals{Requests: map[string]int64{"create": 100}}, writes,
			[]string{"client 100, server 130"}, false},
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
			if has := strings.Contains(got, "known difference"); has != tc.reason {
				t.Errorf("note %q: gives a known reason %v, want %v", got, has, tc.reason)
			}
			// A note written before the causes were declared is explained
			// when it is read, the same way.
			bare, _, _ := strings.Cut(got, knownMarker)
			if again := Explain(bare, tc.kind, tc.totals, tc.server); again != got {
				t.Errorf("Explain(%q) = %q, want %q", bare, again, got)
			}
			// Read back, the note parts into words every case shares, the
			// case's counts and its cause.
			d, ok := ReadNote(got)
			if !ok || !strings.HasPrefix(d.Words, tc.check.prefix()) || !strings.HasSuffix(d.Words, "("+tc.check.Metric+")") ||
				!strings.HasPrefix(d.Counts, "client ") || strings.Contains(d.Counts, "(") || (d.Cause != "") != tc.reason {
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
