package plots

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
)

// TestEventsOf places a run's timeline on each case's measured interval:
// only that case's events, faults from start to undo (or to the end of the
// interval), instants and failures as lines, session changes per interval.
func TestEventsOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	ev := func(at float64, kind, what string, client int) results.TimelineEvent {
		return results.TimelineEvent{At: s(at), Kind: kind, What: what, Client: client}
	}
	run := &results.Run{StartedAt: t0, Timeline: []results.TimelineEvent{
		ev(0, "case", "start fair-2-1", -1),
		ev(0.5, "fault", "kill-leader: server 1", -1), // before the interval, undone in it
		ev(2, "fault", "end kill-leader: restart-server:1", -1),
		ev(2.5, "session", "expired", 0),
		ev(2.6, "session", "disconnected (session 0x1f)", -1),
		ev(3, "fault", "reset-conns: 4 connections", -1),
		ev(3.5, "fault", "cut-client:1 failed: no proxy", 1),
		ev(4, "fault", "latency:50ms", -1),    // still in force at the end
		ev(4.2, "session", "connected", 1),    // not a change the plot counts
		ev(7, "fault", "expire-session:0", 0), // after the interval
		ev(8, "fault", "end of run: latency off", -1),
		ev(9, "case", "end fair-2-1", -1),
		ev(10, "case", "start fair-4-1", -1),
		ev(12, "fault", "reset-conns: 8 connections", -1), // another case's
		ev(15, "case", "end fair-4-1", -1),
	}}
	res := &results.Result{
		Started: t0.Add(s(1)), Elapsed: s(5),
		Series: results.Series{Interval: time.Second, Counts: make([]int64, 5)},
	}
	got := eventsOf(run, res)
	want := []Mark{
		{Label: "kill-leader: server 1", From: 0, To: 1},
		{Label: "reset-conns: 4 connections", From: 2, To: 2},
		{Label: "cut-client:1 failed: no proxy", From: 2.5, To: 2.5},
		{Label: "latency:50ms", From: 3, To: 5},
	}
	if len(got.marks) != len(want) {
		t.Fatalf("marks %+v, want %+v", got.marks, want)
	}
	for i, m := range got.marks {
		if m.Label != want[i].Label || abs(m.From-want[i].From) > 1e-9 || abs(m.To-want[i].To) > 1e-9 {
			t.Errorf("mark %d = %+v, want %+v", i, m, want[i])
		}
	}
	if got.outside != 1 {
		t.Errorf("%d events outside, want 1 (the expiry after the interval)", got.outside)
	}
	if e, d := got.sessions["expired"], got.sessions["disconnected"]; len(e) != 5 || e[1] != 1 || d[1] != 1 || len(got.sessions) != 2 {
		t.Errorf("sessions %v: want one expiry and one disconnect in the second interval", got.sessions)
	}
	if none := eventsOf(run, &results.Result{Elapsed: s(5)}); len(none.marks) != 0 || len(none.sessions) != 0 {
		t.Errorf("a result without a start got events: %+v", none)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
