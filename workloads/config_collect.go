package workloads

import (
	"fmt"
	"sort"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// collect turns the writer's calls and the clients' reloads of the
// measured versions first..last into the case's histograms, skipped
// versions and safety check. Each reload is counted from the start of its
// version's Set and, if it came after it, from the Set's reply: a reload
// that beat the reply is counted as such (BeforeReply), not as a zero.
func (r *configRun) collect(res *results.Result, first, last int64) {
	fromStart, fromReply := results.NewRecorder(), results.NewRecorder()
	lastFromStart, lastFromReply := results.NewRecorder(), results.NewRecorder()
	var skipped, early, lastEarly int64
	if last >= first {
		// until[v-first]: the latest, over clients, first load of v or newer.
		until := make([]time.Duration, last-first+1)
		for _, cl := range r.cls {
			loaded := 0
			for _, rl := range cl.reloads {
				if rl.v >= first && rl.v <= last {
					results.Record(fromStart, rl.at-r.starts[rl.v])
					if rl.at >= r.commits[rl.v] {
						results.Record(fromReply, rl.at-r.commits[rl.v])
					} else {
						early++
					}
					loaded++
				}
			}
			skipped += (last - first + 1) - int64(loaded)
			// The first reload of v or newer: reloads are in version order.
			for v := first; v <= last; v++ {
				i := sort.Search(len(cl.reloads), func(i int) bool { return cl.reloads[i].v >= v })
				if i < len(cl.reloads) {
					until[v-first] = max(until[v-first], cl.reloads[i].at)
				}
			}
		}
		for v := first; v <= last; v++ {
			results.Record(lastFromStart, until[v-first]-r.starts[v])
			if until[v-first] >= r.commits[v] {
				results.Record(lastFromReply, until[v-first]-r.commits[v])
			} else {
				lastEarly++
			}
		}
	}
	addHistogram(res, figures.LatencyPropagate, fromReply)
	addHistogram(res, figures.LatencyPropagateLast, lastFromReply)
	addHistogram(res, figures.LatencyPropagateStart, fromStart)
	addHistogram(res, figures.LatencyPropagateLastStart, lastFromStart)
	if n := res.Ops.Succeeded; n > 0 {
		res.PerOp[figures.VersionsSkipped.Key] = float64(skipped) / float64(n)
		res.PerOp[figures.BeforeReply.Key] = float64(early) / float64(n)
	}
	if lastEarly > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d updates reached every client before the writer's reply: they are in propagate_last_start only", lastEarly))
	}
	final := int64(len(r.commits) - 1)
	for i, cl := range r.cls {
		var what string
		if cl.gone.Load() && cl.last.Load() != final && cl.bad == 0 && cl.back == 0 {
			// Its session was lost: it is in the lost sessions, not a
			// wrong copy of the config.
			continue
		}
		res.Safety.Checked++
		switch {
		case cl.bad > 0:
			what = fmt.Sprintf("client %d loaded %d configs whose data was not what was written", i, cl.bad)
		case cl.back > 0:
			what = fmt.Sprintf("client %d was offered an older version than it had %d times", i, cl.back)
		case cl.last.Load() != final && (r.inDoubt <= final || cl.last.Load() != r.inDoubt):
			// (A client may end on a version whose Set failed: it may
			// have committed.)
			what = fmt.Sprintf("client %d ended on version %d, not the last, %d", i, cl.last.Load(), final)
		default:
			continue
		}
		res.Safety.Violations++
		if len(res.Safety.Details) < 10 {
			res.Safety.Details = append(res.Safety.Details, what)
		}
	}
}
