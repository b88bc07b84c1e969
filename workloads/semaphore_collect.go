package workloads

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
	"github.com/zkbench/zkbench/workloads/measure"
)

// semRecorder turns one semaphore client's events (the lock client loop's,
// lockClient) into the case's accounting: the shared checker and acquire
// histogram (a stripe of it), and the client's own series, operation
// counts and errors. Only its client's loop calls it.
type semRecorder struct {
	id      int
	window  *measure.Window
	checker *safety.SemaphoreChecker

	state    lockClientState
	intended time.Duration // asking: when the acquisition was scheduled
	measured bool          // the last grant is the window's

	acquire        *results.Stripes // shared; this client records into stripe id
	series         *measure.SeriesRecorder
	ops            results.Ops
	stages         int64 // notifications a wait needs at most (stagesOf)
	needed         int64 // notifications of measured grants that moved their waiter forward
	errs           map[string]int64
	samples        map[string]string
	longestStopped time.Duration
	note           string // why its client stopped early, if it did
}

var _ lockSink = (*semRecorder)(nil)

func newSemRecorder(id int, window *measure.Window, checker *safety.SemaphoreChecker, acquire *results.Stripes, interval time.Duration,
	stages int64) *semRecorder {
	return &semRecorder{id: id, window: window, checker: checker, acquire: acquire, series: measure.NewSeriesRecorder(interval), stages: max(stages, 1),
		errs: map[string]int64{}, samples: map[string]string{}}
}

// event records ev, a loop event at ev.At on the case's clock. It follows
// the client as lockRecorder does and refuses an event that does not fit.
// Writes (the lock's fenced register) are not a semaphore's: K holders
// share no register, so they are let pass unrecorded.
func (r *semRecorder) event(ev lockEvent) error {
	from, ok := lockEventFrom[ev.Kind]
	switch {
	case !ok:
		return fmt.Errorf("%w: client %d: %s is not a semaphore client's event", errLockProtocol, r.id, ev.Kind)
	case r.state != from:
		return fmt.Errorf("%w: client %d: %s while %s", errLockProtocol, r.id, ev.Kind, r.state)
	}
	switch ev.Kind {
	case evAsked:
		r.state, r.intended = stateAsking, ev.Intended
	case evGranted:
		r.state = stateHolding
		r.checker.Enter(r.id, ev.Token, ev.At)
		r.measured = r.settle(r.intended, ev.At, nil)
		if r.measured {
			r.acquire.Record(r.id, ev.At-r.intended)
			r.series.Add(ev.At - r.window.MeasureStart())
			r.needed += min(int64(ev.Wakeups), r.stages)
		}
	case evFailed:
		r.state = stateIdle
		r.settle(r.intended, ev.At, ev.Err)
	case evLost:
		r.count("lock_lost", errLostWhileHolding, r.measured)
	case evExit:
		r.state = stateReleasing
		r.checker.Exit(r.id, ev.At)
	case evReleased:
		r.state = stateIdle
	case evReleaseFailed:
		r.state = stateIdle
		r.count("release_"+errorKind(ev.Err), ev.Err, r.measured)
	}
	return nil
}

// settle accounts for one acquisition as lockRecorder.settle does: it
// belongs to the window it ends in; one in flight at the stop is still
// waiting at the end.
func (r *semRecorder) settle(issued, done time.Duration, err error) (measured bool) {
	w := r.window
	switch {
	case w.Measured(done) && err != nil:
		r.ops.Issued++
		if errors.Is(err, backends.ErrUnknownOutcome) {
			r.ops.Unknown++
		} else {
			r.ops.Failed++
		}
		r.count(errorKind(err), err, true)
		return false
	case w.Measured(done) && w.Claim():
		r.ops.Issued++
		r.ops.Succeeded++
		return true
	case w.Measured(done):
	case w.BeforeEnd(done):
		return false
	case !w.BeforeEnd(issued):
		return false
	}
	r.ops.Issued++
	r.ops.StillWaiting++
	r.longestStopped = max(r.longestStopped, done-issued)
	return false
}

func (r *semRecorder) count(kind string, err error, measured bool) {
	if !measured {
		return
	}
	r.errs[kind]++
	if _, ok := r.samples[kind]; !ok {
		r.samples[kind] = err.Error()
	}
}

// collect merges the clients' recorders, the checker and the snapshots
// into the result.
func (sc *semaphoreCase) collect(d *driver, out measure.Outcome) {
	res, recs, stripes, checker, pace := &d.res, sc.recs, sc.acquire, sc.checker, sc.pace
	acquire := results.NewRecorder()
	stripes.MergeInto(acquire)
	perClient := make([]int64, len(recs))
	var (
		needed         int64
		series         []*measure.SeriesRecorder
		longestStopped time.Duration
	)
	samples := map[string]string{}
	for i, r := range recs {
		series = append(series, r.series)
		res.Ops.Issued += r.ops.Issued
		res.Ops.Succeeded += r.ops.Succeeded
		res.Ops.Failed += r.ops.Failed
		res.Ops.Unknown += r.ops.Unknown
		res.Ops.StillWaiting += r.ops.StillWaiting
		perClient[i] = r.ops.Succeeded
		needed += r.needed
		longestStopped = max(longestStopped, r.longestStopped)
		for k, n := range r.errs {
			res.Errors[k] += n
			if _, ok := samples[k]; !ok && r.samples[k] != "" {
				samples[k] = r.samples[k]
			}
		}
		if r.note != "" {
			res.Notes = append(res.Notes, r.note)
		}
	}
	if pace != nil {
		if n, oldest := pace.backlog(out.End); n > 0 {
			res.Ops.Issued += n
			res.Ops.StillWaiting += n
			longestStopped = max(longestStopped, out.End-oldest)
			res.Notes = append(res.Notes, fmt.Sprintf(
				"open loop: %d scheduled acquisitions were still queued for a free client at the end: the clients could not keep up with %.0f/s",
				n, float64(time.Second)/float64(pace.interval)))
		}
	}
	res.Series = measure.MergeSeries(sc.interval, res.Elapsed, series...)
	addHistogram(res, figures.LatencyAcquire, acquire)
	res.Fairness = results.Fairness{Jain: results.JainIndex(perClient)}
	rep := checker.Report()
	res.Safety = checker.Safety()
	d.fill(out, res.Ops.Succeeded, sc.instrumented, needed)
	if rep.Entered > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("holders at once: %.1f on average at a grant, %d at most (%d permits; most at one instant in the history of %d grants: %d)",
			rep.MeanHolders, rep.MaxHolders, rep.Permits, rep.Entered, rep.MostAtOnce))
	}
	if n := res.Ops.StillWaiting; n > 0 && (acquire.TotalCount() == 0 || int64(longestStopped) > acquire.ValueAtQuantile(99.9)) {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"%d acquisitions were still waiting when the case stopped (the longest had waited %v): counted as still waiting at the end, not in the acquire histogram",
			n, longestStopped.Round(time.Millisecond)))
	}
	for _, k := range slices.Sorted(maps.Keys(samples)) {
		res.Notes = append(res.Notes, fmt.Sprintf("first %s error: %s", k, samples[k]))
	}
	if res.Safety.Violations > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("SEMAPHORE OVERFULL: more than %d clients held at once after %d grants", rep.Permits, res.Safety.Violations))
	}
}
