package workloads

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
)

// TestSimpleBarrierFanOut: R rounds at two sizes with the barrier up 200ms
// once every waiter waits. Every round completes and no waiter passes
// early; the watching barrier notifies every waiter exactly once a round
// and costs each two requests (ExistsW, and ExistsW again after the
// notification) whatever the wait, and the servers count the N
// notifications too; the polling barrier notifies nobody and reads many
// times a waiter (200ms up, polled every 20ms).
func TestSimpleBarrierFanOut(t *testing.T) {
	const rounds = 4
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range simpleBarrierSpec().VariantNames(b.Kind()) {
			for _, n := range []int{3, 10} {
				cfg := results.Config{Duration: time.Minute, Ops: rounds,
					Params: map[string]string{ParamPoll: "20ms", ParamBarrierUp: "200ms"}}
				res := runRecipeCase(t, NewSimpleBarrier(), b, v, n, cfg)
				if res.Ops.Succeeded != rounds || res.StoppedBy != StoppedByOps {
					t.Fatalf("%s N=%d: %d of %d rounds, stopped by %s: %v %v", v, n, res.Ops.Succeeded, rounds, res.StoppedBy, res.Errors, res.Notes)
				}
				if want := int64(n * rounds); res.Safety.Violations != 0 || res.Safety.Checked != want {
					t.Fatalf("%s N=%d: safety %+v, want %d checks and no violation", v, n, res.Safety, want)
				}
				for _, h := range []figures.Latency{"pass", "release", "wait"} {
					if res.Latency[h] == nil {
						t.Fatalf("%s N=%d: no %s histogram", v, n, h)
					}
				}
				ev, reqs := res.PerOp["watch_events_per_participant"], res.PerOp["requests_per_participant"]
				srv := res.PerOp["server_watch_events"]
				t.Logf("%s %s N=%d: %.2f notifications and %.1f requests per waiter, %.1f server notifications per round",
					b.Kind(), v, n, ev, reqs, srv)
				switch v {
				case variants.Fair:
					if ev != 1 || reqs != 2 {
						t.Errorf("fair N=%d: %.2f notifications and %.2f requests per waiter, want 1 and 2", n, ev, reqs)
					}
					if srv < float64(n) || srv > float64(n)+1 {
						t.Errorf("fair N=%d: the servers sent %.2f notifications a round, want %d (one a waiter)", n, srv, n)
					}
				case variants.Polling:
					if ev != 0 || reqs < 4 {
						t.Errorf("polling N=%d: %.2f notifications and %.2f requests per waiter, want 0 and many (a read every 20ms for 200ms)", n, ev, reqs)
					}
				}
			}
		}
	})
}
