package workloads

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
)

// TestObserversLearn: every observer learns every new leader; a herd-free
// observer needs one notification per failover, a naive one at most two.
func TestObserversLearn(t *testing.T) {
	const n, k = 10, 2
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range observersSpec().VariantNames(b.Kind()) {
			t.Run(v, func(t *testing.T) {
				res := runRecipeCase(t, NewObservers(), b, v, n, results.Config{Duration: time.Minute, Ops: k})
				if res.Ops.Succeeded != k || res.StoppedBy != StoppedByOps {
					t.Fatalf("%d of %d failovers observed, stopped by %s: %v %v", res.Ops.Succeeded, k, res.StoppedBy, res.Errors, res.Notes)
				}
				if h := res.Latency["observe"]; h == nil || h.Count != n*k {
					t.Fatalf("observe histogram %+v, want %d values", h, n*k)
				}
				last := res.Latency["observe_last"]
				if last == nil || last.Count != k || last.Max < res.Latency["observe"].Max {
					t.Fatalf("observe_last %+v is not the slowest observer", last)
				}
				if res.Safety.Violations != 0 {
					t.Fatalf("safety %+v", res.Safety)
				}
				// The recipe's promise is about the notifications observers
				// consume; ZooKeeper also delivers the odd event to a watch the
				// observer had already given up (Client.LateWatchEvents), which
				// the fan-out figure counts but no observer acts on.
				_, ok := res.PerOp["watch_events_per_observer"]
				per := float64(res.Client.WatchEvents) / float64(n*res.Ops.Succeeded)
				t.Logf("%s %s: last observer knows after p50 %v, %.2f notifications consumed per observer per failover (+%d late), %.1f server requests per failover",
					b.Kind(), v, time.Duration(last.P50), per, res.Client.LateWatchEvents, res.PerOp["server_requests"])
				switch {
				case v == "native":
					if ok {
						t.Errorf("native has client-side counts")
					}
				case v == "fair" && per != 1:
					t.Errorf("fair: %.2f notifications per observer per failover, want 1", per)
				case v == "naive" && (per < 1 || per > 2):
					t.Errorf("naive: %.2f notifications per observer per failover, want 1 to 2", per)
				}
			})
		}
	})
}
