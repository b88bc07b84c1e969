package workloads

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
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
		// Bytes a notification: a relist's listing against a delta's one
		// event. A change counts its bytes once a change, which depends on
		// how many changes a loaded machine lets a relist coalesce (14 of
		// 20 superseded beside two compiles: 312 bytes a change against
		// delta's 320); a notification's bytes do not.
		perEvent := map[string]float64{}
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
			if hr := res.Latency["converge_reply"]; hr != nil && (hr.Count > h.Count || hr.Max > h.Max) {
				t.Errorf("%s: converge_reply %+v: want no more changes than converge %+v and none timed longer from the reply", v, hr, h)
			}
			ev := res.PerOp["watch_events_per_participant"]
			bytes := res.PerOp["bytes_received"]
			t.Logf("%s %s: %.2f notifications and %.2f view updates a member a change, %.0f bytes received a change, %.0f superseded",
				b.Kind(), v, ev, res.PerOp["view_updates_per_participant"], bytes, superseded)
			// A one-shot watch (relist) coalesces the changes that land
			// while its member lists again, the more so the more loaded
			// the machine (0.64 a change with 14 of 20 superseded), so the
			// floor comes from the same run: each change that converged
			// needed a notification at every member after it began, but
			// one that undid an unseen change, which follows a superseded
			// one, converged as it began and needed none.
			floor := (float64(h.Count) - superseded) / changes
			if ev <= 0 || ev < floor-0.01 || ev > 1.5 {
				t.Errorf("%s: %.2f notifications a member a change, want about 1 (at least %.2f: %d converged, %.0f superseded) and at most 1.5", v, ev, floor, h.Count, superseded)
				continue
			}
			perEvent[v] = bytes / (ev * n)
		}
		d, ok := perEvent[variants.Delta]
		if r, rok := perEvent[variants.Relist]; ok && rok && d >= r {
			t.Errorf("delta received %.1f bytes a notification, relist %.1f: want fewer", d, r)
		}
	})
}

// TestMembershipNotAgreed: views that do not agree on the joined group in
// time (here at once: the bound is cut to nothing) end the case as a
// measured failure with its count and note, not the run with an error.
func TestMembershipNotAgreed(t *testing.T) {
	defer func(f func(int) time.Duration) { initialSettle = f }(initialSettle)
	initialSettle = func(int) time.Duration { return 0 }
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := NewMembership().Run(ctx, Case{
			Backend: b, Cluster: preflight(t, b), Variant: variants.Relist, Clients: 8, Repeat: 1,
			Namespace: testcluster.TestNamespace(t, b), Log: NewRunLog(nil, time.Now()),
			Config: results.Config{Duration: time.Minute, Ops: 5, Params: map[string]string{ParamChurn: "20"}},
		})
		if err != nil {
			t.Fatalf("the case's failure ended the run: %v", err)
		}
		run := &results.Run{Format: results.FormatVersion, ID: "t", Status: results.StatusComplete, Results: []results.Result{res}}
		if err := run.Validate(); err != nil {
			t.Fatalf("invalid result: %v", err)
		}
		notes := strings.Join(res.Notes, "\n")
		if res.StoppedBy != StoppedByError || res.Errors["not_agreed"] != 1 || res.Ops.Succeeded != 0 ||
			!strings.Contains(notes, "views did not agree on the group every member joined within 0s") {
			t.Errorf("stopped by %s, errors %v, %d changes, notes %q: want a case stopped by its error, counted and noted", res.StoppedBy, res.Errors, res.Ops.Succeeded, res.Notes)
		}
	})
}

// TestGroupRunCountsEachChangeOnce: a join that no view saw before a leave
// undid it is superseded; the leave, which restores what every view still
// shows, converges as it begins; the late notifications of the join that
// take a view away and back do not time it again. Seen once beside two
// busy loops: 20 changes, 4 timed and 15 superseded, one lost.
func TestGroupRunCountsEachChangeOnce(t *testing.T) {
	g := newGroupRun(2)
	g.setTruth(time.Now()) // the initial group: nobody in
	g.in[0] = true
	g.setTruth(time.Now()) // m0 joins ...
	g.in[0] = false
	g.setTruth(time.Now()) // ... and leaves before any view saw it
	g.seen(0, []string{memberID(0)})
	g.seen(0, nil)
	g.seen(1, []string{memberID(0)})
	g.seen(1, nil)
	if g.changes != 2 || g.superseded != 1 || g.converged != 1 || g.converge.TotalCount() != 1 || g.agreed != 2 {
		t.Errorf("changes %d, superseded %d, converged %d (histogram %d), agreed %d; want 2, 1, 1 (1), 2",
			g.changes, g.superseded, g.converged, g.converge.TotalCount(), g.agreed)
	}
	g.in[1] = true
	g.setTruth(time.Now()) // m1 joins; its write returns; both views see it
	g.replied(time.Now())
	g.seen(0, []string{memberID(1)})
	g.seen(1, []string{memberID(1)})
	g.in[1] = false
	g.setTruth(time.Now())
	if g.changes != 4 || g.superseded != 1 || g.converged != 2 {
		t.Errorf("after a seen change: changes %d, superseded %d, converged %d; want 4, 1, 2", g.changes, g.superseded, g.converged)
	}
	// The leave that converged as it began did so before its reply: it is
	// timed from the start only; the join is timed on both clocks.
	if g.beforeReply != 1 || g.convergeReply.TotalCount() != 1 || g.converge.TotalCount() != 2 {
		t.Errorf("before the reply %d, timed from the reply %d, from the start %d; want 1, 1, 2",
			g.beforeReply, g.convergeReply.TotalCount(), g.converge.TotalCount())
	}
}
