package analysis

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// needsHandoffTable reports whether some case split its handoffs into their
// critical path (the lock workload, instrumented variants).
func needsHandoffTable(run *results.Run) bool {
	return slices.ContainsFunc(run.Results, hasHandoffPath)
}

func hasHandoffPath(r results.Result) bool {
	h := r.Latency[figures.LatencyHandoffNotify]
	return h != nil && h.Count > 0
}

// WriteHandoffPath prints one row per case whose handoffs were split into
// their critical path: the handoff's p50, the holder's release call, the
// release to the grantee's watch event and that event to its grant (p50s
// of each, not parts of one handoff), and with a calibration of the run's
// cluster its write and notify latencies, the floor a handoff's notify
// meets: a commit plus a notification.
func WriteHandoffPath(w io.Writer, run *results.Run) error {
	fmt.Fprintln(w, "p50s: the handoff; the holder's release call; release-event, a release to the next holder's watch event;")
	fmt.Fprintln(w, "event-grant, that event to its grant")
	if cal := run.Calibration; cal != nil && cal.NotifyLatency > 0 {
		fmt.Fprintf(w, "calibrated on the run's %s cluster (p50): write %s, write + notify %s (x notify: the handoff over it)\n", cal.Backend,
			results.FormatDuration(cal.WriteLatency), results.FormatDuration(cal.NotifyLatency))
		if cal.PacedNotifyLatency > 0 {
			fmt.Fprintf(w, "and after %s idle, the hold, as before each handoff: write + notify %s (x paced)\n",
				cal.NotifyPace, results.FormatDuration(cal.PacedNotifyLatency))
		}
		if cal.ContendedNotifyLatency > 0 {
			fmt.Fprintf(w, "and behind another session's write, as a release beside the last holder's enqueue: write + notify %s (x contended)\n",
				results.FormatDuration(cal.ContendedNotifyLatency))
		}
	}
	if hasFigure(run, CPUFloor) {
		fmt.Fprintln(w, "cpu floor: the servers' CPU an acquisition over the cores the load generator and other processes left them,")
		fmt.Fprintln(w, "the shortest mean time between acquisitions that go through the servers one at a time: a bound on 1/ops,")
		fmt.Fprintln(w, "the case's time an acquisition (1/throughput), not on a percentile")
	}
	var cols []column
	for _, c := range summaryColumns(run)[:3] {
		if c.narrow {
			cols = append(cols, c)
		}
	}
	cols = append(cols, handoffColumns(run)...)
	sub := *run
	sub.Results = slices.DeleteFunc(slices.Clone(run.Results), func(r results.Result) bool { return !hasHandoffPath(r) })
	if err := writeCases(w, &sub, cols, 0); err != nil {
		return fmt.Errorf("analysis: write handoff path: %w", err)
	}
	if !hasFigure(&sub, LogSyncs) {
		return nil
	}
	fmt.Fprintln(w, "\nthe members' write-ahead logs: syncs an acquisition on each member, below its writes where several shared a sync")
	if hasFigure(&sub, LogFloor) {
		fmt.Fprintln(w, "and, where the servers time them, the mean sync and the log floor: a member's sync time an acquisition,")
		fmt.Fprintln(w, "which it spends one sync at a time, another bound on 1/ops")
	}
	if err := writeCases(w, &sub, append(cols[:2:2], logColumns(&sub)...), 0); err != nil {
		return fmt.Errorf("analysis: write handoff path: %w", err)
	}
	return nil
}

func handoffColumns(run *results.Run) []column {
	cal := run.Calibration
	latency := func(head string, name figures.Latency) column {
		return column{head: head, narrow: true, wide: true, cell: func(r *results.Result) string { return quantile(r.Latency[name], 50) }}
	}
	cols := []column{
		{head: "handoffs", narrow: true, wide: true, cell: func(r *results.Result) string {
			return fmt.Sprint(r.Latency[figures.LatencyHandoff].Count)
		}},
		latency("handoff", figures.LatencyHandoff),
		latency("release call", figures.LatencyReleaseCall),
		latency("release-event", figures.LatencyHandoffNotify),
		latency("event-grant", figures.LatencyHandoffDecide),
	}
	if cal != nil && cal.NotifyLatency > 0 {
		cols = append(cols, overColumn("x notify", cal, cal.OverNotify))
	}
	if cal != nil && cal.PacedNotifyLatency > 0 {
		cols = append(cols, overColumn("x paced", cal, cal.OverPacedNotify))
	}
	if cal != nil && cal.ContendedNotifyLatency > 0 {
		cols = append(cols, overColumn("x contended", cal, cal.OverContendedNotify))
	}
	if hasFigure(run, CPUFloor) {
		cols = append(cols, column{head: "1/ops", narrow: true, wide: true, cell: func(r *results.Result) string {
			d, ok := Period(r)
			if !ok {
				return unmeasured
			}
			return results.FormatDuration(d)
		}})
		cols = append(cols, column{head: "cpu floor", narrow: true, wide: true, cell: func(r *results.Result) string {
			d, ok := CPUFloor(run, r)
			if !ok {
				return unmeasured
			}
			return results.FormatDuration(d)
		}})
	}
	return cols
}

// logColumns are the members' write-ahead log figures of run's cases: the
// servers' writes an acquisition, each member's syncs, and where the servers
// time them the mean sync and the log floor.
func logColumns(run *results.Run) []column {
	cols := []column{
		{head: "writes (server)", narrow: true, wide: true, cell: func(r *results.Result) string {
			return perOpCell(r, figures.ServerWrites.Key)
		}},
		{head: "log syncs", narrow: true, wide: true, cell: func(r *results.Result) string {
			if n, ok := LogSyncs(run, r); ok {
				return fmt.Sprintf("%.2f", n)
			}
			return unmeasured
		}},
	}
	if !hasFigure(run, LogFloor) {
		return cols
	}
	return append(cols,
		column{head: "mean sync", narrow: true, wide: true, cell: func(r *results.Result) string {
			if d, ok := MeanLogSync(r); ok {
				return results.FormatDuration(d)
			}
			return unmeasured
		}},
		column{head: "log floor", narrow: true, wide: true, cell: func(r *results.Result) string {
			if d, ok := LogFloor(run, r); ok {
				return results.FormatDuration(d)
			}
			return unmeasured
		}})
}

// hasFigure reports whether some case of run has the figure of (CPUFloor,
// LogSyncs, LogFloor).
func hasFigure[T any](run *results.Run, of func(*results.Run, *results.Result) (T, bool)) bool {
	for i := range run.Results {
		if _, ok := of(run, &run.Results[i]); ok {
			return true
		}
	}
	return false
}

// overColumn is a column of the handoff's p50 over a calibrated floor of
// cal (over), measured wherever the column is shown.
func overColumn(head string, cal *results.Calibration, over func(time.Duration) (float64, bool)) column {
	return column{head: head, narrow: true, wide: true, cell: func(r *results.Result) string {
		d, ok := quantileOf(r.Latency[figures.LatencyHandoff], 50)
		if !ok || r.Backend != cal.Backend {
			return unmeasured
		}
		x, _ := over(d)
		return fmt.Sprintf("%.2fx", x)
	}}
}
