package workloads

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// acquisitions is one client's account of what it asked for: where its
// loop is, its operation counts, errors, series and share of the acquire
// histogram. The recorders of the lock and the semaphore keep one each;
// only the client's loop (or its worker process's reader) touches it,
// except the window and the acquire histogram, which are shared.
type acquisitions struct {
	id       int
	state    lockClientState
	intended time.Duration // asking: when the acquisition was scheduled
	measured bool          // the last grant is the window's

	window         *measure.Window
	acquire        *results.Stripes // shared; this client records into stripe id
	series         *measure.SeriesRecorder
	ops            results.Ops
	errs           map[string]int64
	samples        map[string]string
	longestStopped time.Duration
	note           string // why its client stopped early, if it did
}

func newAcquisitions(id int, window *measure.Window, acquire *results.Stripes, interval time.Duration) acquisitions {
	return acquisitions{id: id, window: window, acquire: acquire, series: measure.NewSeriesRecorder(interval),
		errs: map[string]int64{}, samples: map[string]string{}}
}

// follow moves the client along ev, a loop event at ev.At on the case's
// clock, and counts what the lock's and the semaphore's recorders count
// alike: each acquisition's outcome, a measured grant's latency and series
// point, a loss while holding, a failed release. An event that does not fit
// the client's state, or is not a client of noun's, is refused
// (fitsLockEvent). The recorder then adds its checker's part.
func (a *acquisitions) follow(noun string, ev lockEvent) error {
	if err := fitsLockEvent(noun, a.id, a.state, ev); err != nil {
		return err
	}
	switch ev.Kind {
	case evAsked:
		a.state, a.intended = stateAsking, ev.Intended
	case evGranted:
		a.state = stateHolding
		a.measured = a.settle(a.intended, ev.At, nil)
		if a.measured {
			a.granted(a.intended, ev.At)
		}
	case evFailed:
		a.state = stateIdle
		a.settle(a.intended, ev.At, ev.Err)
	case evLost:
		a.count("lock_lost", errLostWhileHolding, a.measured)
	case evExit:
		a.state = stateReleasing
	case evReleased:
		a.state = stateIdle
	case evReleaseFailed:
		a.state = stateIdle
		a.count("release_"+errorKind(ev.Err), ev.Err, a.measured)
	}
	return nil
}

// granted records a measured grant at at of an acquisition scheduled at
// intended.
func (a *acquisitions) granted(intended, at time.Duration) {
	a.acquire.Record(a.id, at-intended)
	a.series.Add(at - a.window.MeasureStart())
}

// settle accounts for one acquisition issued at offset issued that ended at
// done, granted (err nil) or not, and reports whether it is a measured
// grant. An acquisition belongs to the window it ends in, whenever it was
// issued. One that ended after the window — withdrawn by the stop, or
// granted too late or past the budget — but was issued before the end was in
// flight at the stop: it counts as still waiting at the end (neither a
// success nor a failure). One that ended in the warm-up is not counted.
func (a *acquisitions) settle(issued, done time.Duration, err error) (measured bool) {
	w := a.window
	switch {
	case w.Measured(done) && err != nil:
		a.ops.Issued++
		if errors.Is(err, backends.ErrUnknownOutcome) {
			a.ops.Unknown++
		} else {
			a.ops.Failed++
		}
		a.count(errorKind(err), err, true)
		return false
	case w.Measured(done) && w.Claim():
		a.ops.Issued++
		a.ops.Succeeded++
		return true
	case w.Measured(done):
		// Granted past the budget: the window is ending.
	case w.BeforeEnd(done):
		return false // ended in the warm-up
	case !w.BeforeEnd(issued):
		return false // issued after the end
	}
	a.ops.Issued++
	a.ops.StillWaiting++
	a.longestStopped = max(a.longestStopped, done-issued)
	return false
}

func (a *acquisitions) count(kind string, err error, measured bool) {
	if !measured {
		return
	}
	a.errs[kind]++
	if _, ok := a.samples[kind]; !ok {
		a.samples[kind] = err.Error()
	}
}

// account is the client's acquisitions, which every recorder that embeds
// them has.
func (a *acquisitions) account() *acquisitions { return a }

// acquireLoad is what the clients of an acquiring workload (lock,
// semaphore) share: the acquire histogram they record into, a stripe each,
// the interval of their series, and the open loop's pacer (nil: a closed
// loop).
type acquireLoad struct {
	acquire  *results.Stripes
	interval time.Duration
	pace     *pacer
}

// newAcquireLoad is what case c's clients share. The shards of an
// open-loop case each pace their share of the rate, at phases spread over
// one interval.
func newAcquireLoad(c Case) acquireLoad {
	l := acquireLoad{acquire: results.NewStripes(results.DefaultStripes), interval: measure.SeriesInterval(c.Config)}
	if c.Config.Rate > 0 {
		l.pace = &pacer{interval: time.Duration(float64(time.Second) / c.Config.Rate)}
		if sh := c.Shard; sh != nil {
			l.pace.phase = l.pace.interval * time.Duration(sh.Index) / time.Duration(sh.Count)
		}
	}
	return l
}

// acquisitionTotals is the clients' acquisitions added up.
type acquisitionTotals struct {
	perClient      []int64                 // grants, by client
	acquire        *hdrhistogram.Histogram // every client's stripe merged
	longestStopped time.Duration
	samples        map[string]string // the first message of each error kind
}

// addAcquisitions adds the acquisitions of recs, one recorder per client in
// client order, to res: every client's operations, errors and early stops,
// their series and the acquire histogram they share (LatencyAcquire), and
// the open loop's acquisitions that no client was free to take before end,
// which were due and waiting like any queued acquisition.
func addAcquisitions[R interface{ account() *acquisitions }](res *results.Result, load acquireLoad, recs []R, end time.Duration) acquisitionTotals {
	t := acquisitionTotals{perClient: make([]int64, len(recs)), acquire: results.NewRecorder(), samples: map[string]string{}}
	load.acquire.MergeInto(t.acquire)
	var series []*measure.SeriesRecorder
	for i, r := range recs {
		a := r.account()
		series = append(series, a.series)
		res.Ops.Add(a.ops)
		t.perClient[i] = a.ops.Succeeded
		for k, n := range a.errs {
			res.Errors[k] += n
			if _, ok := t.samples[k]; !ok && a.samples[k] != "" {
				t.samples[k] = a.samples[k]
			}
		}
		t.longestStopped = max(t.longestStopped, a.longestStopped)
		if a.note != "" {
			res.Notes = append(res.Notes, a.note)
		}
	}
	if pace := load.pace; pace != nil {
		if n, oldest := pace.backlog(end); n > 0 {
			res.Ops.Issued += n
			res.Ops.StillWaiting += n
			t.longestStopped = max(t.longestStopped, end-oldest)
			res.Notes = append(res.Notes, fmt.Sprintf(
				"open loop: %d scheduled acquisitions were still queued for a free client at the end: the clients could not keep up with %.0f/s",
				n, float64(time.Second)/float64(pace.interval)))
		}
	}
	res.Series = measure.MergeSeries(load.interval, res.Elapsed, series...)
	addHistogram(res, figures.LatencyAcquire, t.acquire)
	return t
}

// note appends to res what the acquire histogram leaves out: withdrawn
// waits, when they were longer than its tail (which then understates the
// wait), and the first message of each kind of error.
func (t acquisitionTotals) note(res *results.Result) {
	acquire := t.acquire
	if n := res.Ops.StillWaiting; n > 0 && (acquire.TotalCount() == 0 || int64(t.longestStopped) > acquire.ValueAtQuantile(99.9)) {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"%d acquisitions were still waiting when the case stopped (the longest had waited %v): counted as still waiting at the end, not in the acquire histogram",
			n, t.longestStopped.Round(time.Millisecond)))
	}
	for _, k := range slices.Sorted(maps.Keys(t.samples)) {
		res.Notes = append(res.Notes, fmt.Sprintf("first %s error: %s", k, t.samples[k]))
	}
}
