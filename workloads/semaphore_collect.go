package workloads

import (
	"fmt"
	"time"

	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
	"github.com/zkbench/zkbench/workloads/measure"
)

// semRecorder turns one semaphore client's events (the lock client loop's,
// lockClient) into the case's accounting: the shared checker and acquire
// histogram (a stripe of it), and the client's own series, operation
// counts and errors. Only its client's loop calls it.
type semRecorder struct {
	acquisitions
	checker *safety.SemaphoreChecker

	stages int64 // notifications a wait needs at most (stagesOf)
	needed int64 // notifications of measured grants that moved their waiter forward
}

var _ lockSink = (*semRecorder)(nil)

func newSemRecorder(id int, window *measure.Window, checker *safety.SemaphoreChecker, acquire *results.Stripes, interval time.Duration,
	stages int64) *semRecorder {
	return &semRecorder{acquisitions: newAcquisitions(id, window, acquire, interval), checker: checker, stages: max(stages, 1)}
}

// event records ev, a loop event at ev.At on the case's clock: the
// client's account (follow), then the checker's part. Writes (the lock's fenced register) are not a semaphore's: K holders
// share no register, so they are let pass unrecorded.
func (r *semRecorder) event(ev lockEvent) error {
	if err := r.follow("semaphore", ev); err != nil {
		return err
	}
	switch ev.Kind {
	case evGranted:
		r.checker.Enter(r.id, ev.Token, ev.At)
		if r.measured {
			r.needed += min(int64(ev.Wakeups), r.stages)
		}
	case evExit:
		r.checker.Exit(r.id, ev.At)
	}
	return nil
}

// collect merges the clients' recorders, the checker and the snapshots
// into the result.
func (sc *semaphoreCase) collect(d *driver, out measure.Outcome) {
	res, recs, checker := &d.res, sc.recs, sc.checker
	tot := addAcquisitions(res, sc.load, recs, out.End)
	var needed int64
	for _, r := range recs {
		needed += r.needed
	}
	res.Fairness = results.Fairness{Jain: results.JainIndex(tot.perClient)}
	rep := checker.Report()
	res.Safety = checker.Safety()
	d.fill(out, res.Ops.Succeeded, sc.instrumented, needed)
	if rep.Entered > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("holders at once: %.1f on average at a grant, %d at most (%d permits; most at one instant in the history of %d grants: %d)",
			rep.MeanHolders, rep.MaxHolders, rep.Permits, rep.Entered, rep.MostAtOnce))
	}
	tot.note(res)
	if res.Safety.Violations > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("SEMAPHORE OVERFULL: more than %d clients held at once after %d grants", rep.Permits, res.Safety.Violations))
	}
}
