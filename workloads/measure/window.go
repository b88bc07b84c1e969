package measure

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/results"
)

// Stop is what ended a case's bounded interval. Reason turns it into the
// results' stop reason, and is the one place that decides it: an
// interrupted case was interrupted whatever else happened, a failure
// outranks the bounds, the duration outranks the operation count, and a
// case that met none of them ended on its count.
type Stop struct {
	// Interrupted: the caller's ctx ended (Ctrl-C, the run's end).
	Interrupted bool
	// Failed: the clients could not go on (an error, every worker gone).
	Failed bool
	// TimedOut: --duration passed.
	TimedOut bool
}

// Reason is the stop reason s describes.
func (s Stop) Reason() results.StopReason {
	switch {
	case s.Interrupted:
		return results.StoppedByInterrupted
	case s.Failed:
		return results.StoppedByError
	case s.TimedOut:
		return results.StoppedByDuration
	}
	return results.StoppedByOps
}

// errBoundFailed is a Bound's cause once Fail ended it.
var errBoundFailed = errors.New("measure: a client failed")

// Bound is the context of a loop that starts its operations until the
// case's --duration passes (if it has one), its caller's ctx ends, or Fail
// ends it for a failure; Stop says which.
type Bound struct {
	parent  context.Context
	ctx     context.Context
	fail    context.CancelCauseFunc
	release context.CancelFunc
}

// NewBound bounds ctx by d (no bound but ctx's for d <= 0). Call Release
// once the loop is over.
func NewBound(ctx context.Context, d time.Duration) *Bound {
	b := &Bound{parent: ctx}
	fctx, fail := context.WithCancelCause(ctx)
	b.fail = fail
	b.ctx, b.release = fctx, func() { fail(context.Canceled) }
	if d > 0 {
		tctx, cancel := context.WithTimeout(fctx, d)
		b.ctx, b.release = tctx, func() { cancel(); fail(context.Canceled) }
	}
	return b
}

// Ctx is the bounded context.
func (b *Bound) Ctx() context.Context { return b.ctx }

// Fail ends the bound for a failure (a client that cannot go on), unless
// it has already ended.
func (b *Bound) Fail() { b.fail(errBoundFailed) }

// Release releases the bound's resources.
func (b *Bound) Release() { b.release() }

// Stop says what ended the bound: failed adds the loop's own failure to
// one Fail reported.
func (b *Bound) Stop(failed bool) Stop {
	return Stop{
		Interrupted: b.parent.Err() != nil,
		Failed:      failed || errors.Is(context.Cause(b.ctx), errBoundFailed),
		TimedOut:    errors.Is(b.ctx.Err(), context.DeadlineExceeded),
	}
}

// Window is the measured interval of a case: a warm-up whose operations are
// not recorded, then measurement until Duration has passed or Ops measured
// operations succeeded, whichever comes first, or until the caller's ctx
// ends. All times are offsets from the moment the workers started, read from
// the process's monotonic clock, which every client shares.
//
// Operations are classified by when they complete: an operation that ends
// inside the window (Measured) is the window's, whenever it was issued, so
// that throughput, per-operation counts and the servers' counter deltas all
// describe the same activity. Each success in the window takes one unit of
// the budget with Claim; the success that spends it ends the window. An
// operation issued before the end that had not completed by then (or whose
// Claim failed) was in flight at the stop: workers count it as still
// waiting at the end (results.Ops.StillWaiting).
type Window struct {
	Warmup   time.Duration
	Duration time.Duration
	Ops      int64
	// Live, if set, counts the window's claimed operations as they happen.
	Live *Live
	// DrainTimeout bounds the wait for workers after the end of the
	// interval (default 20s); then the caller must unblock them (close
	// their sessions) and call Wait again.
	DrainTimeout time.Duration
	// Anchor, if set, is a moment that several processes share (a shard
	// barrier's release): the interval then ends Warmup+Duration after it,
	// not Duration after the opening snapshot, so that processes whose
	// snapshots take different times (one scrapes the servers, the others
	// do not) end their intervals together, and all of equal length.
	Anchor time.Time

	// base is the start of the workers, set by Run and read by Now from
	// any goroutine (a fault's clock among them); nil before.
	base         atomic.Pointer[time.Time]
	measureStart atomic.Int64 // offset in ns + 1; 0 = not measuring yet
	measureEnd   atomic.Int64 // offset in ns + 1; 0 = not ended yet
	// opening and closing are set just before the edges are read from the
	// clock, so that a worker that read the clock earlier is classified
	// exactly (see edge).
	opening, closing atomic.Bool
	opened, ended    chan struct{} // closed once the edge is stored
	claimed          atomic.Int64
	spent            chan struct{} // closed by the Claim that spends the budget
	done             <-chan struct{}
}

// NewWindow returns the Window a case's bounds (cfg's Warmup, Duration
// and Ops) describe, reporting to live.
func NewWindow(cfg results.Config, live *Live) *Window {
	return &Window{Warmup: cfg.Warmup, Duration: cfg.Duration, Ops: cfg.Ops, Live: live, DrainTimeout: 20 * time.Second,
		spent: make(chan struct{}), opened: make(chan struct{}), ended: make(chan struct{})}
}

// NewMeasuringWindow returns a window with no bound that measures from
// now on, as Run leaves one without a warm-up once its workers started:
// for recorders driven without Run (their unit tests).
func NewMeasuringWindow() *Window {
	w := NewWindow(results.Config{}, nil)
	w.setBase()
	w.opening.Store(true)
	w.measureStart.Store(1)
	close(w.opened)
	return w
}

// Now is the offset from the start of the workers: 0 before Run starts
// them.
func (w *Window) Now() time.Duration {
	b := w.base.Load()
	if b == nil {
		return 0
	}
	return time.Since(*b)
}

// setBase makes now the start of the workers.
func (w *Window) setBase() {
	now := time.Now()
	w.base.Store(&now)
}

// edge returns the offset stored in v (+1 encoded) and whether it is set.
// While the controller takes the snapshot at that edge (flag set, edge not
// yet stored) it blocks until stored is closed: a worker that completes an
// operation then waits, milliseconds, to learn on which side of the edge
// its clock reading falls, and issues nothing meanwhile.
func edge(v *atomic.Int64, flag *atomic.Bool, stored <-chan struct{}) (time.Duration, bool) {
	if e := v.Load(); e != 0 {
		return time.Duration(e - 1), true
	}
	if !flag.Load() {
		return 0, false
	}
	<-stored
	return time.Duration(v.Load() - 1), true
}

// Measured reports whether offset at — a clock reading taken before the
// call — falls in the measured interval: after the warm-up, before the end.
func (w *Window) Measured(at time.Duration) bool {
	start, ok := edge(&w.measureStart, &w.opening, w.opened)
	if !ok || at < start {
		return false
	}
	end, ok := edge(&w.measureEnd, &w.closing, w.ended)
	return !ok || at < end
}

// BeforeEnd reports whether offset at (a reading taken before the call) is
// before the end of the measured interval, ended or not.
func (w *Window) BeforeEnd(at time.Duration) bool {
	end, ok := edge(&w.measureEnd, &w.closing, w.ended)
	return !ok || at < end
}

// MeasureStart is the offset at which measurement began (0 before).
func (w *Window) MeasureStart() time.Duration {
	ms := w.measureStart.Load()
	if ms == 0 {
		return 0
	}
	return time.Duration(ms - 1)
}

// Claim takes one operation from the budget; false once Ops operations were
// claimed (never false without an Ops bound). The claim that spends the
// budget ends the window.
func (w *Window) Claim() bool {
	if w.Ops <= 0 {
		w.Live.Op()
		return true
	}
	n := w.claimed.Add(1)
	if n <= w.Ops {
		w.Live.Op()
	}
	if n == w.Ops {
		close(w.spent)
	}
	return n <= w.Ops
}

// Exhausted reports whether the operation budget is spent.
func (w *Window) Exhausted() bool { return w.Ops > 0 && w.claimed.Load() >= w.Ops }

// Outcome is what Run saw.
type Outcome struct {
	Before, After Snapshot
	// Start and End are offsets of the measured interval from Base.
	Start, End time.Duration
	Base       time.Time
	StoppedBy  results.StopReason
	// Drained: every worker returned within DrainTimeout after the end.
	Drained bool
}

// Elapsed is the measured interval's length.
func (o Outcome) Elapsed() time.Duration { return o.End - o.Start }

// Started is when the measured interval began, in UTC (zero if Base was
// not set).
func (o Outcome) Started() time.Time {
	if o.Base.IsZero() {
		return time.Time{}
	}
	return o.Base.Add(o.Start).UTC()
}

// Run starts the workers with start(runCtx) — which returns a channel
// closed when every worker has returned — and drives the interval: it takes
// the opening snapshot when the warm-up ends (before starting the workers
// when there is none), waits for the duration, the budget (the Claim that
// spent it, or every worker returned after Claim failed) or ctx, takes the
// closing snapshot while the workers are still running (so that the
// withdrawal of in-flight operations is not counted), then cancels runCtx
// and waits up to DrainTimeout for the workers.
func (w *Window) Run(ctx context.Context, start func(runCtx context.Context) <-chan struct{}, snap func() Snapshot) Outcome {
	var o Outcome
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	w.Live.Start()
	if w.Warmup <= 0 {
		o.Before = snap()
		w.setBase()
		w.opening.Store(true)
		w.measureStart.Store(1)
		close(w.opened)
		w.done = start(runCtx)
	} else {
		w.setBase()
		w.done = start(runCtx)
		t := time.NewTimer(w.Warmup)
		select {
		case <-t.C:
		case <-w.done:
		case <-ctx.Done():
		}
		t.Stop()
		o.Before = w.snapEdge(snap, &w.measureStart, &w.opening, w.opened)
	}
	o.Start, o.Base = w.MeasureStart(), *w.base.Load()
	var deadline <-chan time.Time
	if w.Duration > 0 {
		left := w.Duration - (w.Now() - o.Start)
		if !w.Anchor.IsZero() {
			left = time.Until(w.Anchor.Add(w.Warmup + w.Duration))
		}
		t := time.NewTimer(left)
		defer t.Stop()
		deadline = t.C
	}
	var ended Stop
	select {
	case <-ctx.Done():
	case <-deadline:
		ended.TimedOut = true
	case <-w.spent:
	case <-w.done:
		ended.Failed = !w.Exhausted()
	}
	ended.Interrupted = ctx.Err() != nil
	o.StoppedBy = ended.Reason()
	o.After = w.snapEdge(snap, &w.measureEnd, &w.closing, w.ended)
	o.End = time.Duration(w.measureEnd.Load() - 1)
	stop()
	o.Drained = w.Wait(w.DrainTimeout)
	return o
}

// snapEdge takes the snapshot at one edge of the window and stores the edge
// as the midpoint of the snapshot, which reads the clients before and after
// the servers and keeps the midpoint of both (Meter.Snapshot). Workers that
// complete an operation meanwhile wait for the edge (see edge).
func (w *Window) snapEdge(snap func() Snapshot, v *atomic.Int64, flag *atomic.Bool, stored chan struct{}) Snapshot {
	flag.Store(true)
	t1 := w.Now()
	s := snap()
	t2 := w.Now()
	v.Store(int64(t1+(t2-t1)/2) + 1)
	close(stored)
	return s
}

// Wait waits up to d for the workers to return and reports whether they did.
func (w *Window) Wait(d time.Duration) bool {
	if w.done == nil {
		return true
	}
	if d <= 0 {
		d = 20 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
		return false
	}
}

// SeriesInterval is the bucket width of a case's series: 100ms for cases up
// to two minutes, else one second.
func SeriesInterval(cfg results.Config) time.Duration {
	if cfg.Duration > 0 && cfg.Duration <= 2*time.Minute {
		return 100 * time.Millisecond
	}
	return time.Second
}

// SeriesRecorder counts events per interval for one worker. Not safe for
// concurrent use: give each worker its own and merge with MergeSeries.
type SeriesRecorder struct {
	interval time.Duration
	counts   []int64
}

// NewSeriesRecorder returns an empty recorder with the given bucket width.
func NewSeriesRecorder(interval time.Duration) *SeriesRecorder {
	return &SeriesRecorder{interval: interval}
}

// Interval is the recorder's bucket width.
func (s *SeriesRecorder) Interval() time.Duration { return s.interval }

// Add counts one event at offset since (the measurement's start).
func (s *SeriesRecorder) Add(since time.Duration) {
	if since < 0 {
		return
	}
	i := int(since / s.interval)
	for len(s.counts) <= i {
		s.counts = append(s.counts, 0)
	}
	s.counts[i]++
}

// MergeSeries sums recorders into one series of n buckets covering elapsed
// (events after elapsed land in the last bucket).
func MergeSeries(interval, elapsed time.Duration, recs ...*SeriesRecorder) results.Series {
	n := int((elapsed + interval - 1) / interval)
	if n < 1 {
		n = 1
	}
	out := results.Series{Interval: interval, Counts: make([]int64, n)}
	for _, r := range recs {
		for i, c := range r.counts {
			if i >= n {
				i = n - 1
			}
			out.Counts[i] += c
		}
	}
	return out
}

// RunEach runs run(ctx, item) for every item on a goroutine of its own and
// returns a channel closed once every one has returned: the start function
// of a Window.Run whose clients each loop until ctx ends.
func RunEach[T any](ctx context.Context, items []T, run func(T, context.Context)) <-chan struct{} {
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(it, ctx)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}
