package workloads

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/results"
)

// Why a case stopped (results.Result.StoppedBy).
const (
	StoppedByOps         = "ops"
	StoppedByDuration    = "duration"
	StoppedByInterrupted = "interrupted"
	StoppedByError       = "error"
)

// Window is the measured interval of a case: a warm-up whose operations are
// not recorded, then measurement until Duration has passed or Ops measured
// operations were issued and finished, whichever comes first, or until the
// caller's ctx ends. All times are offsets from the moment the workers
// started, read from the process's monotonic clock, which every client
// shares.
//
// Workers ask Measured(t) for each operation they issue at t and, when it
// is, Claim() one unit of the operation budget before issuing it.
type Window struct {
	Warmup   time.Duration
	Duration time.Duration
	Ops      int64
	// DrainTimeout bounds the wait for workers after the end of the
	// interval (default 20s); then the caller must unblock them (close
	// their sessions) and call Wait again.
	DrainTimeout time.Duration

	base         time.Time
	measureStart atomic.Int64 // offset in ns + 1; 0 = not measuring yet
	measureEnd   atomic.Int64 // offset in ns + 1; 0 = not ended yet
	claimed      atomic.Int64
	done         <-chan struct{}
}

// NewWindow returns the Window cfg's bounds describe.
func NewWindow(cfg results.Config) *Window {
	return &Window{Warmup: cfg.Warmup, Duration: cfg.Duration, Ops: cfg.Ops, DrainTimeout: 20 * time.Second}
}

// Now is the offset from the start of the workers.
func (w *Window) Now() time.Duration { return time.Since(w.base) }

// Measured reports whether an operation issued at offset at falls in the
// measured interval: after the warm-up and before the end.
func (w *Window) Measured(at time.Duration) bool {
	ms := w.measureStart.Load()
	if ms == 0 || at < time.Duration(ms-1) {
		return false
	}
	me := w.measureEnd.Load()
	return me == 0 || at < time.Duration(me-1)
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
// claimed (never false without an Ops bound). A worker stops issuing when
// Claim fails.
func (w *Window) Claim() bool {
	if w.Ops <= 0 {
		return true
	}
	return w.claimed.Add(1) <= w.Ops
}

// Exhausted reports whether the operation budget is spent.
func (w *Window) Exhausted() bool { return w.Ops > 0 && w.claimed.Load() >= w.Ops }

// Outcome is what Run saw.
type Outcome struct {
	Before, After Snapshot
	// Start and End are offsets of the measured interval.
	Start, End time.Duration
	StoppedBy  string
	// Drained: every worker returned within DrainTimeout after the end.
	Drained bool
}

// Elapsed is the measured interval's length.
func (o Outcome) Elapsed() time.Duration { return o.End - o.Start }

// Run starts the workers with start(runCtx) — which returns a channel
// closed when every worker has returned — and drives the interval: it takes
// the opening snapshot when the warm-up ends (before starting the workers
// when there is none), waits for the duration, the budget (every worker
// returned after Claim failed) or ctx, takes the closing snapshot while the
// workers are still running (so that the withdrawal of in-flight operations
// is not counted), then cancels runCtx and waits up to DrainTimeout for the
// workers.
func (w *Window) Run(ctx context.Context, start func(runCtx context.Context) <-chan struct{}, snap func() Snapshot) Outcome {
	var o Outcome
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	if w.Warmup <= 0 {
		o.Before = snap()
		w.base = time.Now()
		w.measureStart.Store(1)
		w.done = start(runCtx)
	} else {
		w.base = time.Now()
		w.done = start(runCtx)
		t := time.NewTimer(w.Warmup)
		select {
		case <-t.C:
		case <-w.done:
		case <-ctx.Done():
		}
		t.Stop()
		o.Before = snap()
		w.measureStart.Store(int64(w.Now()) + 1)
	}
	o.Start = w.MeasureStart()
	var deadline <-chan time.Time
	if w.Duration > 0 {
		t := time.NewTimer(w.Duration - (w.Now() - o.Start))
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-ctx.Done():
		o.StoppedBy = StoppedByInterrupted
	case <-deadline:
		o.StoppedBy = StoppedByDuration
	case <-w.done:
		o.StoppedBy = StoppedByError
		if w.Exhausted() {
			o.StoppedBy = StoppedByOps
		}
	}
	if ctx.Err() != nil {
		o.StoppedBy = StoppedByInterrupted
	}
	o.End = w.Now()
	w.measureEnd.Store(int64(o.End) + 1)
	o.After = snap()
	stop()
	o.Drained = w.Wait(w.DrainTimeout)
	return o
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
