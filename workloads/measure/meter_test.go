package measure

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/selfstat"
	"github.com/zkbench/zkbench/results"
)

type noScrape struct{}

func (noScrape) Scrape(context.Context) (backends.Metrics, error) { return nil, nil }

// TestFillCrossChecks: the meter's per-operation figures come from the
// declared figures, and a client|server disagreement with a documented
// cause carries that cause, with both numbers.
func TestFillCrossChecks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kind      backends.Kind
		client    instrument.Counts
		server    backends.Metrics
		witness   backends.Witness // the backend's, over the interval
		wantNotes []string         // substrings, one note each
		reason    bool
	}{
		{
			name:      "etcd naive lock watch events",
			kind:      backends.Etcd,
			client:    instrument.Counts{WatchEvents: 5579, Requests: map[string]int64{"create": 50, "delete": 50}},
			server:    backends.Metrics{backends.MetricWatchEvents: 18242, backends.MetricWrites: 100, backends.MetricRequests: 400},
			witness:   backends.Witness{WireWatchEvents: 18100},
			wantNotes: []string{"disagree on watch events by more than 5%: client 5579, server 18242, excess 12663, predicted 12521 ± 912"},
			reason:    true,
		},
		{
			name: "zookeeper barrier writes",
			kind: backends.ZooKeeper,
			client: instrument.Counts{WatchEvents: 40, Requests: map[string]int64{
				"create": 20, "delete": 20, "ensure_path": 10}},
			server:    backends.Metrics{backends.MetricWatchEvents: 40, backends.MetricWrites: 60},
			witness:   backends.Witness{PathCreates: 20},
			wantNotes: []string{"disagree on writes (create+create_seq+delete) by more than 5%: client 40, server 60, excess 20, predicted 20 ± 3"},
			reason:    true,
		},
		{
			name:      "zookeeper watch events, no known cause",
			kind:      backends.ZooKeeper,
			client:    instrument.Counts{WatchEvents: 10, Requests: map[string]int64{}},
			server:    backends.Metrics{backends.MetricWatchEvents: 40},
			wantNotes: []string{"disagree on watch events by more than 5%: client 10, server 40"},
		},
		{
			name:   "agreement",
			kind:   backends.Etcd,
			client: instrument.Counts{WatchEvents: 100, Requests: map[string]int64{"create": 50, "delete": 50}},
			server: backends.Metrics{backends.MetricWatchEvents: 101, backends.MetricWrites: 100},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Meter{scraper: noScrape{}}
			res := &results.Result{Backend: tc.kind, Clients: 10}
			before := Snapshot{Client: instrument.Counts{Requests: map[string]int64{}}, Server: backends.Metrics{}, HasWitness: true}
			after := Snapshot{Client: tc.client, Server: tc.server, Witness: tc.witness, HasWitness: true}
			m.Fill(res, before, after, 10, true, 0)
			if got, want := res.PerOp[figures.WatchEvents.Key], float64(tc.client.WatchEvents)/10; got != want {
				t.Errorf("%s = %v, want %v", figures.WatchEvents.Key, got, want)
			}
			for _, f := range figures.ServerPerOp() {
				v, scraped := tc.server[f.Metric]
				got, ok := res.PerOp[f.Key]
				if ok != scraped || got != v/10 {
					t.Errorf("%s = %v (%v), want %v (%v)", f.Key, got, ok, v/10, scraped)
				}
			}
			var notes []string
			for _, n := range res.Notes {
				if strings.Contains(n, "disagree") {
					notes = append(notes, n)
				}
			}
			if len(notes) != len(tc.wantNotes) {
				t.Fatalf("notes %q, want %d like %q", notes, len(tc.wantNotes), tc.wantNotes)
			}
			for i, w := range tc.wantNotes {
				if !strings.Contains(notes[i], w) {
					t.Errorf("note %q lacks %q", notes[i], w)
				}
				if has := strings.Contains(notes[i], "known difference (docs/figures.md): "); has != tc.reason {
					t.Errorf("note %q gives a documented cause: %v, want %v", notes[i], has, tc.reason)
				}
			}
		})
	}
}

// A result's server figures are counter differences: a gauge the backend
// names is left out, whether the members are summed or compared one by one.
func TestFillLeavesGaugesOut(t *testing.T) {
	m := &Meter{scraper: noScrape{}, isGauge: func(k string) bool { return k == "zk_avg_latency" }}
	before := Snapshot{Server: backends.Metrics{"zk_avg_latency": 60, "zk_packets_received": 100, backends.MetricWrites: 10}}
	after := Snapshot{Server: backends.Metrics{"zk_avg_latency": 10.3, "zk_packets_received": 150, backends.MetricWrites: 20}}
	res := results.Result{Clients: 1}
	m.Fill(&res, before, after, 10, false, 0)
	if _, ok := res.Server["zk_avg_latency"]; ok || res.Server["zk_packets_received"] != 50 || res.Server[backends.MetricWrites] != 10 {
		t.Fatalf("server %v: want the counters' differences and no average", res.Server)
	}
}

// TestClientCounts: the instrument's counts become the results' client
// counts field by field, the requests copied, not shared.
func TestClientCounts(t *testing.T) {
	in := instrument.Counts{Requests: map[string]int64{"get": 3, "create": 1}, Failures: map[string]int64{"get": 1},
		WatchesArmed: 4, WatchEvents: 5, LateWatchEvents: 6, WastedWakeups: 7, BytesSent: 8, BytesReceived: 9, SessionLostEvents: 2}
	got := clientCounts(in)
	want := results.ClientCounts{Requests: map[string]int64{"get": 3, "create": 1}, WatchesArmed: 4, WatchEvents: 5,
		LateWatchEvents: 6, WastedWakeups: 7, BytesSent: 8, BytesReceived: 9}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("clientCounts = %+v, want %+v", got, want)
	}
	in.Requests["get"] = 100
	if got.Requests["get"] != 3 {
		t.Error("the results' requests share the instrument's map")
	}
}

// lateMember answers every member's scrape but b's first one, as a member
// of a loaded machine or one rejoining its ensemble may.
type lateMember struct{ calls int }

func (l *lateMember) Scrape(ctx context.Context) (backends.Metrics, error) { return nil, nil }

func (l *lateMember) ScrapeMembers(ctx context.Context) ([]backends.MemberMetrics, error) {
	l.calls++
	b := backends.MemberMetrics{Endpoint: "b:1", Metrics: backends.Metrics{backends.MetricWrites: float64(100 + l.calls)}}
	if l.calls == 1 {
		b = backends.MemberMetrics{Endpoint: "b:1", Err: errors.New("i/o timeout")}
	}
	return []backends.MemberMetrics{{Endpoint: "a:1", Metrics: backends.Metrics{backends.MetricWrites: float64(l.calls)}}, b}, nil
}

// A member that did not answer a scrape is asked again; the others keep
// their first answer.
func TestScrapeMembersAsksAgain(t *testing.T) {
	l := &lateMember{}
	ms, err := scrapeMembers(context.Background(), l)
	if err != nil || l.calls != 2 {
		t.Fatalf("%d scrapes, %v: want a second one for the member that did not answer", l.calls, err)
	}
	if ms[0].Metrics[backends.MetricWrites] != 1 || ms[1].Err != nil || ms[1].Metrics[backends.MetricWrites] != 102 {
		t.Errorf("members %+v: want a's first answer and b's second", ms)
	}
}

// A lost session's note says which side was late from the meter's timer
// over the session timeout before the loss.
func TestLossCauseAroundTheLoss(t *testing.T) {
	t0 := time.Now()
	var wakes []selfstat.Wake
	for i := range 200 { // 10 s of wake-ups, on time but for one 1.5 s stall at 6 s
		w := selfstat.Wake{At: t0.Add(time.Duration(i) * selfstat.SamplePeriod)}
		if i == 120 {
			w.Late = 1500 * time.Millisecond
		}
		wakes = append(wakes, w)
	}
	m := &Meter{last: selfstat.Peaks{Wakes: wakes}}
	load := &results.Load{Cores: 2, KeepAlives: &results.KeepAlives{What: results.KeepAlivePingSent, Interval: time.Second,
		Lateness: results.Spread{Count: 100}, Replies: results.Spread{Count: 100, Max: 2 * time.Second}}}
	if got := m.LossCause(load, []time.Time{t0.Add(7 * time.Second)}); !strings.Contains(got, "the client was late (its 50 ms timer woke up to 1.50s late in the 3.00s before a loss") {
		t.Errorf("a loss 1 s after a 1.5 s stall: %q", got)
	}
	got := m.LossCause(load, []time.Time{t0.Add(9500 * time.Millisecond)})
	if !strings.Contains(got, "the client ran on time") || !strings.Contains(got, "the server or the network was late") {
		t.Errorf("a loss 3.5 s after the stall, the pings' replies slow: %q", got)
	}
	if got := m.LossCause(nil, []time.Time{t0.Add(time.Hour)}); got != "" {
		t.Errorf("a loss outside the sampled interval, nothing measured: %q", got)
	}
}
