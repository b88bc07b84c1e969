package workloads

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testcluster"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
)

// TestMembershipConvergence: 8 members, 20 changes at 20 a second. Every
// variant the backend has converges after the churn (no violation), every
// change is counted, the converge histogram holds the changes that were
// not superseded, and every member sees about one notification a change.
// The relist variant's bytes received a change exceed the delta variant's
// (a listing of the group against the one change).
func TestMembershipConvergence(t *testing.T) {
	const n, changes = 8, 20
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		bytes := map[string]float64{}
		for _, v := range membershipSpec().VariantNames(b.Kind()) {
			cfg := results.Config{Duration: time.Minute, Ops: changes, Params: map[string]string{ParamChurn: "20"}}
			res := runRecipeCase(t, NewMembership(), b, v, n, cfg)
			if res.Ops.Succeeded != changes || res.StoppedBy != StoppedByOps {
				t.Fatalf("%s: %d of %d changes, stopped by %s: %v %v", v, res.Ops.Succeeded, changes, res.StoppedBy, res.Errors, res.Notes)
			}
			if res.Safety.Violations != 0 || res.Safety.Checked != n {
				t.Fatalf("%s: safety %+v", v, res.Safety)
			}
			h := res.Latency["converge"]
			superseded := res.PerOp["superseded_share"] * changes
			if h == nil || float64(h.Count)+superseded < changes-0.5 {
				t.Fatalf("%s: converge histogram %v with %.0f superseded, want %d changes in all", v, h, superseded, changes)
			}
			ev := res.PerOp["watch_events_per_participant"]
			bytes[v] = res.PerOp["bytes_received"]
			t.Logf("%s %s: %.2f notifications and %.2f view updates a member a change, %.0f bytes received a change, %.0f superseded",
				b.Kind(), v, ev, res.PerOp["view_updates_per_participant"], bytes[v], superseded)
			if ev < 0.5 || ev > 1.5 {
				t.Errorf("%s: %.2f notifications a member a change, want about 1", v, ev)
			}
		}
		if d, ok := bytes[variants.Delta]; ok && d >= bytes[variants.Relist] {
			t.Errorf("delta received %.0f bytes a change, relist %.0f: want fewer", d, bytes[variants.Relist])
		}
	})
}
