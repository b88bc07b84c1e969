package results

import (
	"strings"
	"testing"
	"time"
)

// The client-bound rule on synthetic figures: each bound on its own, and
// an etcd response gap only with the scheduler also slow.
func TestLoadBound(t *testing.T) {
	quiet := Spread{Count: 1000, P50: 10 * time.Microsecond, P99: 200 * time.Microsecond, Max: time.Millisecond}
	pings := func(late int64) *KeepAlives {
		return &KeepAlives{What: KeepAlivePingSent, Interval: 1333 * time.Millisecond,
			Lateness: Spread{Count: 100, Max: 500 * time.Millisecond}, Late: late}
	}
	for _, tc := range []struct {
		name string
		load *Load
		want []BoundReason
	}{
		{"not measured", nil, nil},
		{"idle", &Load{Cores: 2, CPUFraction: 0.2, Sched: quiet, KeepAlives: pings(0)}, nil},
		{"cpu just under", &Load{Cores: 2, CPUFraction: 0.899, Sched: quiet}, nil},
		{"cpu", &Load{Cores: 2, CPUFraction: 0.9, Sched: quiet}, []BoundReason{BoundCPU}},
		{"starved by other processes", &Load{Cores: 2, CPUFraction: 0.29, RunQueueShare: 0.86, Sched: quiet}, []BoundReason{BoundStarved}},
		{"waiting, but not wanting the cores", &Load{Cores: 2, CPUFraction: 0.1, RunQueueShare: 0.55, Sched: quiet}, nil},
		{"a little run-queue wait", &Load{Cores: 2, CPUFraction: 0.5, RunQueueShare: 0.35, Sched: quiet}, nil},
		{"one core, nearly all used, the rest waited", &Load{Cores: 1, CPUFraction: 0.88, RunQueueShare: 0.3, Sched: quiet}, []BoundReason{BoundCPU}},
		{"used and starved", &Load{Cores: 2, CPUFraction: 0.6, RunQueueShare: 0.6, Sched: quiet}, []BoundReason{BoundCPU, BoundStarved}},
		{"scheduler", &Load{Cores: 1, CPUFraction: 0.5, Sched: Spread{Count: 10, P99: MaxSchedP99}}, []BoundReason{BoundScheduler}},
		{"scheduler, a tenth of the case's latency", &Load{Cores: 2, CPUFraction: 0.5, Sched: Spread{Count: 10, P99: 20 * time.Millisecond},
			LatencyP99: 200 * time.Millisecond}, []BoundReason{BoundScheduler}},
		{"a herd's scheduler burst beside latencies of seconds", &Load{Cores: 2, CPUFraction: 0.44, Sched: Spread{Count: 10, P99: 15 * time.Millisecond},
			LatencyP99: 3500 * time.Millisecond}, nil},
		{"one late ping in a hundred", &Load{Cores: 2, Sched: quiet, KeepAlives: pings(1)}, []BoundReason{BoundKeepAlive}},
		{"etcd responses late, client quiet: the server's", &Load{Cores: 2, Sched: quiet,
			KeepAlives: &KeepAlives{What: KeepAliveResponse, Interval: time.Second, Lateness: Spread{Count: 10}, Late: 5}}, nil},
		{"etcd responses late, scheduler slow", &Load{Cores: 2, Sched: Spread{Count: 10, P99: MaxSchedP99 / 2},
			KeepAlives: &KeepAlives{What: KeepAliveResponse, Interval: time.Second, Lateness: Spread{Count: 10}, Late: 5}}, []BoundReason{BoundKeepAlive}},
		{"all three", &Load{Cores: 1, CPUFraction: 1, Sched: Spread{Count: 10, P99: time.Second}, KeepAlives: pings(50)},
			[]BoundReason{BoundCPU, BoundScheduler, BoundKeepAlive}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.load.Bound()
			var got []BoundReason
			if b != nil {
				got = b.Reasons
				for _, r := range got {
					if !strings.Contains(b.Detail, string(r)+" (") {
						t.Errorf("detail %q lacks %s", b.Detail, r)
					}
				}
			}
			if strings.Join(reasons(got), ",") != strings.Join(reasons(tc.want), ",") {
				t.Fatalf("Bound = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBoundNote: a client-bound case's note reads back as the words every
// such note shares and the case's own detail, as results files hold it.
func TestBoundNote(t *testing.T) {
	b := &ClientBound{Reasons: []BoundReason{BoundCPU}, Detail: "cpu (97% of 2 cores)"}
	for _, embedded := range []bool{false, true} {
		note := b.Note(embedded)
		words, detail, ok := ReadBoundNote(note)
		if !ok || detail != b.Detail || strings.Contains(words, b.Detail) ||
			strings.Contains(words, "shares the process") != embedded || !strings.HasSuffix(words, "; left out of capacity answers") {
			t.Errorf("ReadBoundNote(%q) = %q, %q, %v", note, words, detail, ok)
		}
	}
	kept := "client-bound: the load generator, not the servers, was the limit of this case: starved (ran 11% and waited " +
		"for a CPU 85% of 2 cores: the machine was oversubscribed); left out of capacity answers"
	if _, detail, ok := ReadBoundNote(kept); !ok || !strings.HasPrefix(detail, "starved (ran 11%") {
		t.Errorf("a kept run's note reads as %q, %v", detail, ok)
	}
	if _, _, ok := ReadBoundNote("clients poll every 1s"); ok {
		t.Error("ReadBoundNote read an unrelated note")
	}
}

func reasons(rs []BoundReason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func TestLossCause(t *testing.T) {
	quiet := Spread{Count: 100, P99: 100 * time.Microsecond}
	ka := func(what string, late int64, replyMax time.Duration) *Load {
		return &Load{Cores: 2, Sched: quiet, KeepAlives: &KeepAlives{What: what, Interval: 1333 * time.Millisecond,
			Lateness: Spread{Count: 1000, Max: 800 * time.Millisecond}, Late: late, Replies: Spread{Count: 1000, Max: replyMax}}}
	}
	for _, tc := range []struct {
		name string
		load *Load
		want string
	}{
		{"not measured", nil, ""},
		{"client saturated", &Load{Cores: 2, CPUFraction: 0.95, Sched: quiet}, "the client was late (cpu"},
		{"a few late pings", ka(KeepAlivePingSent, 2, time.Millisecond), "the client was late (2 keep-alives sent"},
		{"pings on time, replies slow", ka(KeepAlivePingSent, 0, 2*time.Second), "the server or the network was late"},
		{"etcd responses late", ka(KeepAliveResponse, 3, 0), "the server or the network was late (3 keep-alive responses"},
		{"nothing late", ka(KeepAlivePingSent, 0, time.Millisecond), "neither"},
	} {
		if got := LossCause(tc.load); !strings.Contains(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("%s: LossCause = %q, want %q", tc.name, got, tc.want)
		}
	}
}
