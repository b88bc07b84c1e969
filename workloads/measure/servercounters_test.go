package measure

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
)

func TestFillPartial(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	member := func(ep string, writes, requests float64) backends.MemberMetrics {
		return backends.MemberMetrics{Endpoint: ep, Metrics: backends.Metrics{
			backends.MetricWrites: writes, backends.MetricRequests: requests, "zk_packets_received": requests,
		}, StatsStarted: t0.Add(-time.Hour), Restartable: []string{backends.MetricRequests, "zk_packets_received"}}
	}
	snap := func(at time.Time, pids map[string]int, ms ...backends.MemberMetrics) Snapshot {
		return Snapshot{At: at, Members: ms, PIDs: pids, Server: backends.SumMembers(ms)}
	}
	pids := map[string]int{"a:1": 10, "b:1": 20, "c:1": 30}
	before := snap(t0, pids, member("a:1", 100, 1000), member("b:1", 100, 1000), member("c:1", 100, 1000))
	before.Members[1].Started = t0.Add(-time.Hour) // b reports its process start
	end := t0.Add(10 * time.Second)

	tests := []struct {
		name    string
		after   Snapshot
		partial bool
		writes  float64 // summed write delta
		hasReq  bool
		note    string
	}{
		{"all ran through", snap(end, pids, member("a:1", 150, 1100), member("b:1", 110, 1010), member("c:1", 101, 1001)), false, 0, true, ""},
		{"down at the end", snap(end, map[string]int{"a:1": 10, "c:1": 30},
			member("a:1", 150, 1100), backends.MemberMetrics{Endpoint: "b:1", Err: errors.New("refused")}, member("c:1", 101, 1001)),
			true, 51, true, "2 of 3 members ran through the case): b:1 did not answer at the end"},
		{"restarted process", snap(end, map[string]int{"a:1": 10, "b:1": 21, "c:1": 30},
			member("a:1", 150, 1100), member("b:1", 3, 9), member("c:1", 101, 1001)),
			true, 51, true, "b:1 restarted (process 20, then 21)"},
		{"restarted, not answering yet", snap(end, map[string]int{"a:1": 10, "b:1": 21, "c:1": 30},
			member("a:1", 150, 1100), backends.MemberMetrics{Endpoint: "b:1", Err: errors.New("refused")}, member("c:1", 101, 1001)),
			true, 51, true, "b:1 restarted (process 20, then 21) and did not answer at the end"},
		{"a slow answer is no restart", func() Snapshot {
			// A loaded server answered the last mntr 5s after it was
			// asked: the start derived from the reply moved, the one from
			// the request did not.
			s := snap(end, pids, member("a:1", 150, 1100), member("b:1", 110, 1010), member("c:1", 101, 1001))
			for i := range s.Members {
				s.Members[i].StatsStarted = t0.Add(-time.Hour + 5*time.Second)
				s.Members[i].StatsStartedEarliest = t0.Add(-time.Hour)
			}
			return s
		}(), false, 0, true, ""},
		{"reported start moved", func() Snapshot {
			s := snap(end, pids, member("a:1", 150, 1100), member("b:1", 3, 9), member("c:1", 101, 1001))
			s.Members[1].Started = t0.Add(5 * time.Second)
			return s
		}(), true, 51, true, "b:1 restarted (its process started again 5s into the case)"},
		{"counter went down", snap(end, pids, member("a:1", 150, 1100), member("b:1", 3, 1200), member("c:1", 101, 1001)),
			true, 51, true, "b:1's zkbench_server_writes went down by 97"},
		{"request statistics restarted", func() Snapshot {
			s := snap(end, pids, member("a:1", 150, 40), member("b:1", 110, 30), member("c:1", 101, 20))
			for i := range s.Members {
				s.Members[i].StatsStarted = t0.Add(4 * time.Second)
			}
			return s
		}(), true, 61, false, "a:1's request statistics started again 4s into the case"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var res results.Result
			got := fillPartial(&res, before, tc.after, nil)
			if got != tc.partial || res.ServerPartial != tc.partial {
				t.Fatalf("fillPartial = %v, ServerPartial %v; want %v (notes %q)", got, res.ServerPartial, tc.partial, res.Notes)
			}
			if !tc.partial {
				if res.Server != nil || len(res.Notes) > 0 {
					t.Fatalf("a whole scrape was touched: %v %q", res.Server, res.Notes)
				}
				return
			}
			if w := res.Server[backends.MetricWrites]; w != tc.writes {
				t.Errorf("writes delta %v, want %v over the members that ran through", w, tc.writes)
			}
			if _, ok := res.Server[backends.MetricRequests]; ok != tc.hasReq {
				t.Errorf("requests kept = %v, want %v: %v", ok, tc.hasReq, res.Server)
			}
			if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], tc.note) {
				t.Errorf("notes %q, want one saying %q", res.Notes, tc.note)
			}
		})
	}

	t.Run("no member ran through", func(t *testing.T) {
		var res results.Result
		down := backends.MemberMetrics{Endpoint: "a:1", Err: errors.New("refused")}
		if !fillPartial(&res, snap(t0, nil, member("a:1", 1, 1)), snap(end, nil, down), nil) {
			t.Fatal("not reported")
		}
		if res.Server != nil || res.ServerPartial || len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], "server counters not measured: no member ran through") {
			t.Fatalf("server %v, partial %v, notes %q", res.Server, res.ServerPartial, res.Notes)
		}
	})
}

func TestChangedServers(t *testing.T) {
	if s := changedServers(map[string]int{"a:1": 1}, map[string]int{"a:1": 1}); s != "" {
		t.Fatalf("same processes: %q", s)
	}
	s := changedServers(map[string]int{"a:1": 1, "b:1": 2}, map[string]int{"a:1": 3, "c:1": 4})
	for _, want := range []string{"server a:1 restarted during the case (process 1, then 3)",
		"server b:1 was not running at the end (process 2 gone)", "server c:1 was not running at the start"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
	if got := byHostPort(map[string]int{"http://127.0.0.1:2379": 5, "127.0.0.1:2181": 6}); got["127.0.0.1:2379"] != 5 || got["127.0.0.1:2181"] != 6 {
		t.Errorf("byHostPort = %v", got)
	}
}
