package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
	"github.com/zkbench/zkbench/workloads/measure"
)

// RWLockWorkload is the shared lock benchmark: N clients, each on its own
// session with its own shared lock (recipes/variants.RWLocks), contend for
// one lock at <namespace>/rwlock in a closed loop: each draws its mode
// (a read with probability ParamReadShare), acquires, holds for Hold,
// releases, thinks for Think, and again.
//
// It records acquire latency over all acquisitions ("acquire") and by mode
// ("acquire_read", "acquire_write"), writer starvation (the waits of
// writers overtaken by readers that asked after them, "writer_overtaken",
// and those readers per acquisition, PerOp writer_overtaken), readers
// holding at once at each reader grant (PerOp readers_at_once, the most
// in a note), and the notifications split into needed (the one that ended
// a wait: a writer's release wakes every reader it admits, each one
// needed) and wasted (the rest), beside the common figures (requests,
// bytes, server counts). Safety: a writer never holds with anyone, a
// reader never with a writer (safety.RWChecker).
type RWLockWorkload struct{}

// NewRWLock returns the shared lock workload.
func NewRWLock() *RWLockWorkload { return &RWLockWorkload{} }

// rwlockSpec declares the shared lock workload.
func rwlockSpec() Spec {
	return Spec{
		Name:    "rwlock",
		Summary: "one acquisition of a shared lock, a read with probability --read-share, held --hold, think --think",
		Unit:    figures.Acquisition,
		Variants: fromFamily(variants.RWLocks(),
			VariantSpec{Name: variants.Naive, Class: figures.Naive},
			VariantSpec{Name: variants.Fair, Class: figures.HerdFree},
			VariantSpec{Name: variants.Native, Class: figures.Baseline, Why: errors.New("it is etcd's experimental recipes.RWMutex; go-zookeeper has none")}),
		Latencies: []figures.Latency{figures.LatencyAcquire, figures.LatencyAcquireRead, figures.LatencyAcquireWrite, figures.LatencyWriterOvertaken},
		Params:    []Param{readShareParam("0.9")},
		Knobs:     []Knob{KnobHold, KnobThink, KnobWarmup},
		New:       func() Workload { return NewRWLock() },
	}
}

// Run runs one shared lock case. See Workload.Run.
func (w *RWLockWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, rwlockSpec(), c, 0, &rwlockCase{})
}

// rwlockCase is one shared lock case: its clients and the checker of
// their grants.
type rwlockCase struct {
	rws          []*rwClient
	checker      *safety.RWChecker
	instrumented bool
}

func (wc *rwlockCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	if c.Config.Rate > 0 {
		return measure.Outcome{}, fmt.Errorf("%w: the rwlock workload runs a closed loop only (no --rate)", ErrBadCase)
	}
	s := d.settings()
	v := variantOf(s, variants.RWLocks())
	if s.err == nil && !v.Supports(c.Backend.Kind()) {
		return measure.Outcome{}, fmt.Errorf("%w: rwlock has no %s variant on %s (go-zookeeper has no shared lock recipe)", ErrUnknownVariant, c.Variant, c.Backend.Kind())
	}
	share := s.float(ParamReadShare)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	wc.instrumented = v.ClientCounts
	clients, err := d.open(ctx, c.Clients, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	path := c.Namespace + "/rwlock"
	d.keep = []string{path}
	window := measure.NewWindow(c.Config, c.Live)
	checker := safety.NewRWChecker()
	rws := make([]*rwClient, c.Clients)
	for i := range rws {
		l, err := v.New(clients.Sessions[i], path)
		if err != nil {
			return measure.Outcome{}, fmt.Errorf("workloads: shared lock %s for client %d: %w", c.Variant, i, err)
		}
		rws[i] = &rwClient{id: i, lock: l, s: clients.Sessions[i], c: clients.Counters[i], window: window, checker: checker,
			share: share, hold: c.Config.Hold, think: c.Config.Think, rng: rand.New(rand.NewPCG(uint64(c.Repeat), uint64(i))),
			read: results.NewRecorder(), write: results.NewRecorder(), overtaken: results.NewRecorder(), errs: map[string]int64{},
			series: measure.NewSeriesRecorder(measure.SeriesInterval(c.Config))}
	}
	wc.rws, wc.checker = rws, checker
	c.log().Progress(fmt.Sprintf("  %d clients connected; %.0f%% reads; measuring", c.Clients, 100*share))
	return d.measure(ctx, window, func(runCtx context.Context) <-chan struct{} {
		return measure.RunEach(runCtx, rws, (*rwClient).run)
	}, func() measure.Snapshot { return d.snapshot(ctx, clients) }, drainNames{plural: "clients",
		stuck: func(limit time.Duration) error {
			return fmt.Errorf("workloads: %d shared lock clients did not stop within %v of the end of the case", c.Clients, limit)
		}})
}

// collect merges the clients' records into the result.
func (wc *rwlockCase) collect(d *driver, out measure.Outcome) {
	res, rws, checker, instrumented := &d.res, wc.rws, wc.checker, wc.instrumented
	all, read, write, overtaken := results.NewRecorder(), results.NewRecorder(), results.NewRecorder(), results.NewRecorder()
	perClient := make([]int64, len(rws))
	var needed, reads, overtakers int64
	tokens := false // some grant carried a token: overtaking is measured
	var series []*measure.SeriesRecorder
	for i, r := range rws {
		series = append(series, r.series)
		read.Merge(r.read)
		write.Merge(r.write)
		all.Merge(r.read)
		all.Merge(r.write)
		overtaken.Merge(r.overtaken)
		res.Ops.Succeeded += r.ops.Succeeded
		res.Ops.Failed += r.ops.Failed
		res.Ops.StillWaiting += r.ops.StillWaiting
		perClient[i] = r.ops.Succeeded
		needed += r.needed
		reads += r.reads
		overtakers += r.overtakers
		tokens = tokens || r.tokens
		for k, n := range r.errs {
			if res.Errors[k] == 0 && r.firstErr != nil {
				res.Notes = append(res.Notes, fmt.Sprintf("first %s error: %v", k, r.firstErr))
			}
			res.Errors[k] += n
		}
	}
	res.Ops.Issued = res.Ops.Succeeded + res.Ops.Failed + res.Ops.StillWaiting
	res.Series = measure.MergeSeries(measure.SeriesInterval(d.c.Config), res.Elapsed, series...)
	for name, h := range map[figures.Latency]*hdrhistogram.Histogram{figures.LatencyAcquire: all, figures.LatencyAcquireRead: read, figures.LatencyAcquireWrite: write, figures.LatencyWriterOvertaken: overtaken} {
		addHistogram(res, name, h)
	}
	res.Fairness = results.Fairness{Jain: results.JainIndex(perClient)}
	rep := checker.Report()
	res.Safety = checker.Safety()
	d.fill(out, res.Ops.Succeeded, instrumented, needed)
	if n := res.Ops.Succeeded; n > 0 {
		res.PerOp[figures.ReadShare.Key] = float64(reads) / float64(n)
		if instrumented {
			res.PerOp[figures.NecessaryWakeups.Key] = float64(needed) / float64(n)
		}
	}
	if rep.ReaderGrants > 0 {
		res.PerOp[figures.ReadersAtOnce.Key] = rep.MeanReaders
		res.Notes = append(res.Notes, fmt.Sprintf("readers holding at once: %.1f on average at a reader's grant, %d at most", rep.MeanReaders, rep.MaxReaders))
	}
	switch n := overtaken.TotalCount(); {
	case !tokens:
		res.Notes = append(res.Notes, "writer starvation not measured: this variant's grants carry no token (queue position)")
	case n > 0:
		res.Notes = append(res.Notes, fmt.Sprintf("writer starvation: %d writer waits were overtaken by %d readers queued behind them, the longest such wait %v",
			n, overtakers, time.Duration(overtaken.Max()).Round(time.Microsecond)))
	case write.TotalCount() > 0:
		res.Notes = append(res.Notes, fmt.Sprintf("writer starvation: no reader queued behind a waiting writer was granted before it (%d writer grants; the longest writer wait %v)",
			write.TotalCount(), time.Duration(write.Max()).Round(time.Microsecond)))
	}
	if n := res.Ops.Succeeded; n > 0 && tokens {
		res.PerOp[figures.WriterOvertaken.Key] = float64(overtakers) / float64(n)
	}
	if rep.Violations > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("SHARED LOCK VIOLATED %d times (a writer with anyone, or a reader with a writer)", rep.Violations))
	}
}

// rwClient is one client of the shared lock workload. Its records are its
// own until collect.
type rwClient struct {
	id      int
	lock    recipes.RWLock
	s       backends.Session
	c       *instrument.Counters
	window  *measure.Window
	checker *safety.RWChecker
	share   float64
	hold    time.Duration
	think   time.Duration
	rng     *rand.Rand

	read, write, overtaken *hdrhistogram.Histogram
	series                 *measure.SeriesRecorder
	ops                    results.Ops
	needed, reads          int64
	overtakers             int64 // readers queued behind a waiting writer and granted first
	tokens                 bool  // a grant carried a token
	errs                   map[string]int64
	firstErr               error
}

// run repeats: draw a mode, acquire, hold, release, think, until ctx ends.
func (r *rwClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		mode := recipes.Write
		if r.rng.Float64() < r.share {
			mode = recipes.Read
		}
		ask := r.checker.Ask()
		asked := r.window.Now()
		g, err := r.lock.Acquire(ctx, mode)
		done := r.window.Now()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				if r.window.BeforeEnd(asked) {
					r.ops.StillWaiting++ // withdrawn at the end of the case
				}
				return
			case r.window.Measured(done):
				r.ops.Failed++
				r.errs[errorKind(err)]++
				if r.firstErr == nil {
					r.firstErr = err
				}
			}
			if sessionEnded(r.s) || !sleepCtx(ctx, errorBackoff) {
				return
			}
			continue
		}
		entry := r.checker.Enter(r.id, mode == recipes.Write, ask, g.Token, done)
		if r.window.Measured(done) {
			if r.window.Claim() {
				r.ops.Succeeded++
				r.tokens = r.tokens || g.Token != 0
				r.series.Add(done - r.window.MeasureStart())
				wait := done - asked
				if mode == recipes.Read {
					r.reads++
					results.Record(r.read, wait)
				} else {
					results.Record(r.write, wait)
					if entry.Overtaken > 0 {
						results.Record(r.overtaken, wait)
						r.overtakers += int64(entry.Overtaken)
					}
				}
				if g.Wakeups > 0 {
					r.needed++
				}
			} else {
				r.ops.StillWaiting++
			}
		}
		if r.hold > 0 {
			t := time.NewTimer(r.hold)
			select {
			case <-t.C:
			case <-ctx.Done():
			case <-g.Lost:
			}
			t.Stop()
		}
		r.checker.Exit(r.id, r.window.Now())
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		err = r.lock.Release(rctx)
		cancel()
		if err != nil && sessionEnded(r.s) {
			return
		}
		if r.think > 0 && !sleepCtx(ctx, r.think) {
			return
		}
	}
}
