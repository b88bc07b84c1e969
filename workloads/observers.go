package workloads

import (
	"context"
	"fmt"
	"sync/atomic"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// ObserversWorkload measures how fast a crowd learns of a new leader: N
// clients, each on its own session with an Observer of the variant, follow
// an election among a few candidates (ParamCandidates, default 3, each on
// its own session; at least K+1 so that a candidate is left for every
// failover). The leader's session is ended K times (--ops or
// ParamFailovers, ParamKill as in the failover workload); each time the case
// measures, from the kill, when each observer knows the new leader
// ("observe") and when the last one does ("observe_last"), and the
// observers' notifications and requests per failover.
//
// Every observer must learn of every change, so N notifications per
// failover is the floor for any variant; the naive observers, who watch the
// leader node itself, pay about twice that (its deletion, then its
// re-creation), and do not wake when candidates behind the leader come and
// go. Client-side counts (Client, PerOp "watch_events", "requests") are the
// observers' alone; "watch_events_per_observer" divides by N; the
// candidates' notifications are "candidate_watch_events" per failover;
// server figures cover everyone.
type ObserversWorkload struct{}

// NewObservers returns the observers workload.
func NewObservers() *ObserversWorkload { return &ObserversWorkload{} }

// observersSpec declares the leader observers workload.
func observersSpec() Spec {
	return Spec{
		Name:      "observers",
		Summary:   "one leader change until the last observer knows it",
		Unit:      figures.Term,
		Variants:  electionVariants(),
		Latencies: []figures.Latency{figures.LatencyFailover, figures.LatencyObserve, figures.LatencyObserveAll},
		Params: append(electionParams(),
			Param{Key: ParamCandidates, Type: ParamCount, Default: "3", Help: "candidates besides the observers (at least failovers+1)"}),
		New: func() Workload { return NewObservers() },
	}
}

// Run runs one observers case. See Workload.Run.
func (ow *ObserversWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	s := newSettings(observersSpec(), c)
	set, candidates := readElectionSettings(s), s.count(ParamCandidates)
	if s.err != nil {
		return results.Result{Workload: observersSpec().Name, Variant: c.Variant, Clients: c.Clients}, s.err
	}
	candidates = max(candidates, set.failovers+1)
	return drive(ctx, observersSpec(), c, candidates, &observersCase{set: set, candidates: candidates})
}

// observersCase is one observers case: the election among the
// candidates and the crowd that follows it.
type observersCase struct {
	set          electionSettings
	candidates   int
	crowd        *crowd
	instrumented bool
}

func (oc *observersCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c, set, candidates := d.c, oc.set, oc.candidates
	s := d.settings()
	v := electionVariant(s)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	oc.instrumented = v.ClientCounts
	observers, err := d.open(ctx, c.Clients, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	cands, err := d.open(ctx, candidates, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	e, err := newElectionRun(ctx, d, v, cands, set)
	if err != nil {
		return measure.Outcome{}, err
	}
	crowd := &crowd{e: e, known: make([]atomic.Int64, c.Clients), knownAt: make([]atomic.Int64, c.Clients), out: make([]atomic.Bool, c.Clients),
		observe: results.NewRecorder(), last: results.NewRecorder()}
	oc.crowd = crowd
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	for i, s := range observers.Sessions {
		crowd.follow(runCtx, i, v.New.Observer(s, e.path))
	}
	e.campaign(runCtx)
	out := crowd.failovers(ctx, observers)
	stop()
	e.wg.Wait()
	// The killed leaders' sessions were ended on purpose.
	d.expectedLost = int64(e.killed)
	return out, nil
}

func (oc *observersCase) collect(d *driver, out measure.Outcome) {
	c, res, crowd := d.c, &d.res, oc.crowd
	e := crowd.e
	res.Safety = e.checker.Result().Safety
	addHistogram(res, figures.LatencyObserve, crowd.observe)
	addHistogram(res, figures.LatencyObserveAll, crowd.last)
	addHistogram(res, figures.LatencyFailover, e.latency)
	res.Series = measure.MergeSeries(e.series.Interval(), res.Elapsed, e.series)
	// Each observer needs one notification per failover.
	ops := res.Ops.Succeeded
	d.fill(out, ops, oc.instrumented, ops*int64(c.Clients))
	if ev, ok := res.PerOp[figures.WatchEvents.Key]; ok {
		res.PerOp[figures.WatchEventsPerObserver.Key] = ev / float64(c.Clients)
		if ops > 0 {
			res.PerOp[figures.CandidateWatchEvents.Key] = float64(crowd.candEvents) / float64(ops)
		}
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d candidates besides the %d observers; client-side counts are the observers'", oc.candidates, c.Clients))
	for k, n := range e.errs {
		res.Errors[k] += n
	}
}

// crowd is the observers of one case: what each knows and since when.
type crowd struct {
	e          *electionRun
	known      []atomic.Int64 // token of the leader observer i last learned
	knownAt    []atomic.Int64 // offset at which it learned it
	out        []atomic.Bool  // observer i's Next failed: it follows no more
	observe    *hdrhistogram.Histogram
	last       *hdrhistogram.Histogram
	candEvents int64
}

// follow starts observer i: Next after Next until the case ends.
func (cr *crowd) follow(ctx context.Context, i int, o recipes.Observer) {
	cr.e.wg.Add(1)
	go func() {
		defer cr.e.wg.Done()
		var info recipes.LeaderInfo
		for {
			next, err := o.Next(ctx, info)
			if err != nil {
				cr.out[i].Store(true)
				if ctx.Err() == nil {
					cr.e.countErr("observe_"+errorKind(err), err)
				}
				return
			}
			info = next
			cr.knownAt[i].Store(int64(cr.e.now()))
			cr.known[i].Store(info.Token)
		}
	}()
}
