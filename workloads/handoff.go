package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// errBudget ends a selector's Run once the case's term budget is spent.
var errBudget = errors.New("workloads: term budget spent")

// HandoffWorkload measures leadership handoff: N candidates, each on its
// own session with a Selector of the variant (Curator's LeaderSelector with
// autoRequeue), take terms of --hold each and requeue after every term.
//
// It records terms per second (the case's Ops count terms), the handoff gap
// from one term's end to the next term's start when the next leader was
// already queued ("handoff"), each candidate's wait from requeue to its
// next term ("term_wait"), and the fairness of turns: Jain's index over
// terms per candidate and FIFO inversions (terms given to a candidate that
// requeued after another candidate still waiting; 0 for a strict
// round-robin). Per term: watch notifications, wasted ones, client requests
// and server requests. The lock checker's exclusion doubles as the leader
// checker: two terms at once is a safety violation.
type HandoffWorkload struct{}

// NewHandoff returns the handoff workload.
func NewHandoff() *HandoffWorkload { return &HandoffWorkload{} }

// handoffSpec declares the leadership handoff workload.
func handoffSpec() Spec {
	return Spec{
		Name:      "handoff",
		Summary:   "one leadership term; candidates take turns (selector with requeue)",
		Unit:      figures.Handoff,
		Variants:  electionVariants(),
		Latencies: []figures.Latency{figures.LatencyHandoff, figures.LatencyTermWait},
		Knobs:     []Knob{KnobHold, KnobWarmup},
		New:       func() Workload { return NewHandoff() },
	}
}

// Run runs one handoff case. See Workload.Run.
func (hw *HandoffWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, handoffSpec(), c, 0, &handoffCase{})
}

// handoffCase is one handoff case: its candidates and the checker of their
// terms.
type handoffCase struct {
	v        variants.Variant[recipes.Election]
	workers  []*handoffWorker
	checker  *LockChecker
	interval time.Duration
}

func (hc *handoffCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	s := d.settings()
	v := electionVariant(s)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	hc.v = v
	clients, err := d.open(ctx, c.Clients, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	path := c.Namespace + "/election"
	d.keep = []string{path}
	window := measure.NewWindow(c.Config, c.Live)
	checker := NewLockChecker()
	interval := measure.SeriesInterval(c.Config)
	workers := make([]*handoffWorker, c.Clients)
	for i, s := range clients.Sessions {
		workers[i] = &handoffWorker{
			id: i, sel: v.New.Selector(s, path, fmt.Sprintf("c%d", i)), window: window, checker: checker,
			hold: c.Config.Hold, wait: results.NewRecorder(), series: measure.NewSeriesRecorder(interval),
		}
	}
	hc.workers, hc.checker, hc.interval = workers, checker, interval
	c.log().Progress(fmt.Sprintf("  %d candidates connected; measuring", c.Clients))
	start := func(runCtx context.Context) <-chan struct{} {
		return measure.RunEach(runCtx, workers, (*handoffWorker).run)
	}
	return d.measure(ctx, window, start, func() measure.Snapshot { return d.snapshot(ctx, clients) }, drainNames{plural: "candidates",
		stuck: func(limit time.Duration) error {
			return fmt.Errorf("workloads: %d candidates did not stop within %v of the end of the case", c.Clients, limit)
		}})
}

func (hc *handoffCase) collect(d *driver, out measure.Outcome) {
	res, workers, v := &d.res, hc.workers, hc.v
	wait := results.NewRecorder()
	perClient := make([]int64, len(workers))
	var series []*measure.SeriesRecorder
	var inWindow int64
	for i, wk := range workers {
		for _, g := range wk.grants {
			if !g.Before(out.Before.At) && g.Before(out.After.At) {
				inWindow++
			}
		}
		wait.Merge(wk.wait)
		series = append(series, wk.series)
		perClient[i] = wk.terms
		res.Ops.Issued += wk.terms
		res.Ops.Succeeded += wk.terms
		for k, n := range wk.errs {
			res.Errors[k] += n
		}
		if wk.firstErr != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("candidate %d: %v", i, wk.firstErr))
		}
	}
	chk := hc.checker.Result()
	res.Safety = chk.Safety
	res.Fairness = results.Fairness{FIFOInversions: chk.FIFOInversions, Jain: results.JainIndex(perClient)}
	res.Series = measure.MergeSeries(hc.interval, res.Elapsed, series...)
	addHistogram(res, figures.LatencyHandoff, chk.Handoff)
	addHistogram(res, figures.LatencyTermWait, wait)
	// Per-term figures divide the counters' deltas by the terms that began
	// between the two snapshots, which is not always the measured terms: a
	// term can begin while a snapshot scrapes the servers, or after the
	// budget was spent. A term needs at most one notification.
	d.fill(out, inWindow, v.ClientCounts, inWindow)
	if inWindow != res.Ops.Succeeded {
		res.Notes = append(res.Notes, fmt.Sprintf("per-term figures are over the %d terms that began between the snapshots (%d measured)", inWindow, res.Ops.Succeeded))
	}
}

// handoffWorker is one candidate. Its recorders are its own.
type handoffWorker struct {
	id      int
	sel     recipes.Selector
	window  *measure.Window
	checker *LockChecker
	hold    time.Duration

	wait     *hdrhistogram.Histogram
	series   *measure.SeriesRecorder
	terms    int64
	grants   []time.Time // when every term began, measured or not
	errs     map[string]int64
	firstErr error
}

func (wk *handoffWorker) run(ctx context.Context) {
	ticket := wk.checker.Ask()
	asked := wk.window.Now()
	err := wk.sel.Run(ctx, func(tctx context.Context) error {
		at := wk.window.Now()
		measured := wk.window.Measured(at)
		if measured && !wk.window.Claim() {
			wk.checker.Grant(wk.id, ticket, 0, at, 0, false)
			wk.checker.Release(wk.id, wk.window.Now())
			wk.grants = append(wk.grants, time.Now())
			ticket = -1 // granted: nothing left to withdraw
			return errBudget
		}
		wk.checker.Grant(wk.id, ticket, 0, at, 0, measured)
		wk.grants = append(wk.grants, time.Now())
		if measured {
			wk.terms++
			results.Record(wk.wait, at-asked)
			wk.series.Add(at - wk.window.MeasureStart())
		}
		sleepCtx(tctx, wk.hold)
		wk.checker.Release(wk.id, wk.window.Now())
		ticket, asked = wk.checker.Ask(), wk.window.Now()
		return nil
	})
	if ticket >= 0 {
		wk.checker.Withdraw(ticket)
	}
	if err == nil || errors.Is(err, errBudget) || ctx.Err() != nil {
		return
	}
	if wk.errs == nil {
		wk.errs = map[string]int64{}
	}
	wk.errs[errorKind(err)]++
	wk.firstErr = err
}
