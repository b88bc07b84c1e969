package analysis

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/zkbench/zkbench/results"
)

// needsWorkTable reports whether any case checked the work its critical
// sections did (the ledger workload).
func needsWorkTable(run *results.Run) bool {
	return slices.ContainsFunc(run.Results, func(r results.Result) bool { return r.Work != nil })
}

// WriteWork prints one row per case that checked its critical sections'
// work (the ledger): operations committed and finished for a crashed
// holder, the crashes and how their operations ended, the checker's
// anomalies by kind, the recovery from each kill to the next grant, and the
// work's store requests and bytes per committed operation.
func WriteWork(w io.Writer, run *results.Run) error {
	var cols []column
	for _, c := range summaryColumns(run)[:3] {
		if c.narrow {
			cols = append(cols, c)
		}
	}
	cols = append(cols, workColumns()...)
	var sub results.Run
	sub = *run
	sub.Results = slices.DeleteFunc(slices.Clone(run.Results), func(r results.Result) bool { return r.Work == nil })
	if err := writeCases(w, &sub, cols, 0); err != nil {
		return fmt.Errorf("analysis: write work: %w", err)
	}
	return nil
}

func workColumns() []column {
	count := func(head string, f func(*results.Work) int64) column {
		return column{head: head, narrow: true, wide: true, cell: func(r *results.Result) string {
			if r.Work == nil {
				return unmeasured
			}
			return strconv.FormatInt(f(r.Work), 10)
		}}
	}
	perOp := func(head string, f func(*results.Work) int64) column {
		return column{head: head, narrow: true, wide: true, cell: func(r *results.Result) string {
			if r.Work == nil || r.Work.Committed == 0 {
				return unmeasured
			}
			return fmt.Sprintf("%.1f", float64(f(r.Work))/float64(r.Work.Committed))
		}}
	}
	return []column{
		count("ops", func(w *results.Work) int64 { return w.Committed }),
		count("finished", func(w *results.Work) int64 { return w.Recovered }),
		{head: "crashes", narrow: true, wide: true, cell: func(r *results.Result) string {
			if r.Work == nil {
				return unmeasured
			}
			return crashEnds(r.Work.Crashes)
		}},
		count("lost", func(w *results.Work) int64 { return w.Anomalies.LostUpdates }),
		count("twice", func(w *results.Work) int64 { return w.Anomalies.AppliedTwice }),
		count("partial", func(w *results.Work) int64 { return w.Anomalies.PartialVisible }),
		count("off", func(w *results.Work) int64 { return w.Anomalies.Mismatched }),
		{head: "stale a|r", narrow: true, wide: true, cell: func(r *results.Result) string {
			if r.Work == nil {
				return unmeasured
			}
			return fmt.Sprintf("%d|%d", r.Work.Anomalies.StaleAccepted, r.Work.Anomalies.StaleRejected)
		}},
		{head: "recovery s", narrow: true, wide: true, cell: func(r *results.Result) string {
			if r.Work == nil {
				return unmeasured
			}
			return recoveries(r.Work.Crashes)
		}},
		perOp("req/op", func(w *results.Work) int64 { return w.Requests }),
		perOp("bytes/op", func(w *results.Work) int64 { return w.Bytes }),
	}
}

// crashEnds is "2: 1 completed, 1 partial", or "0".
func crashEnds(cs []results.Crash) string {
	if len(cs) == 0 {
		return "0"
	}
	n := map[string]int{}
	for _, c := range cs {
		n[c.Ended]++
	}
	s := strconv.Itoa(len(cs)) + ":"
	sep := " "
	for _, k := range []string{results.CrashCompleted, results.CrashNothing, results.CrashPending, results.CrashPartial, results.CrashIdle} {
		if n[k] > 0 {
			s += fmt.Sprintf("%s%d %s", sep, n[k], k)
			sep = ", "
		}
	}
	return s
}

// recoveries is the least and the most recovery of the crashes of
// holders, in seconds, or "-".
func recoveries(cs []results.Crash) string {
	var lo, hi time.Duration
	for _, c := range cs {
		if c.Recovery <= 0 {
			continue
		}
		if lo == 0 || c.Recovery < lo {
			lo = c.Recovery
		}
		hi = max(hi, c.Recovery)
	}
	if hi == 0 {
		return unmeasured
	}
	if lo == hi {
		return fmt.Sprintf("%.2f", lo.Seconds())
	}
	return fmt.Sprintf("%.2f-%.2f", lo.Seconds(), hi.Seconds())
}
