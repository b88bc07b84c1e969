package workloads

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/results"
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
	set, err := readElectionSettings(observersSpec(), c.Config)
	if err != nil {
		return results.Result{Workload: observersSpec().Name, Variant: c.Variant, Clients: c.Clients}, err
	}
	candidates, err := observersSpec().Int(c.Config, ParamCandidates)
	if err != nil {
		return results.Result{Workload: observersSpec().Name, Variant: c.Variant, Clients: c.Clients}, err
	}
	candidates = max(candidates, set.failovers+1)
	rc, err := newRecipeCase(observersSpec(), c, candidates)
	if err != nil {
		return rc.res, err
	}
	v, err := lookupElection(c)
	if err != nil {
		return rc.res, err
	}
	observers, err := rc.open(ctx, c.Clients)
	if err != nil {
		return rc.res, err
	}
	defer rc.closeAll(ctx, observers)
	cands, err := rc.open(ctx, candidates)
	if err != nil {
		return rc.res, err
	}
	defer rc.closeAll(ctx, cands)
	if set.kill == KillExpire && !canExpire(cands.Sessions[0], c.Backend) {
		return rc.res, endSession(ctx, cands.Sessions[0], c.Backend, KillExpire)
	}
	path := c.Namespace + "/election"
	e := &electionRun{
		rc: rc, clients: cands, set: set, checker: NewLeaderChecker(candidates),
		start: time.Now(), wins: make(chan elected, candidates),
		latency: results.NewRecorder(), lostNotice: results.NewRecorder(),
		lostAt: make([]atomic.Int64, candidates), series: NewSeriesRecorder(SeriesInterval(c.Config)),
	}
	for i, s := range cands.Sessions {
		e.latches = append(e.latches, v.New.Latch(s, path, fmt.Sprintf("c%d", i)))
	}
	crowd := &crowd{e: e, known: make([]atomic.Int64, c.Clients), knownAt: make([]atomic.Int64, c.Clients),
		observe: results.NewRecorder(), last: results.NewRecorder()}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	for i, s := range observers.Sessions {
		crowd.follow(runCtx, i, v.New.Observer(s, path))
	}
	e.campaign(runCtx)
	out := crowd.failovers(ctx, observers)
	stop()
	e.wg.Wait()
	rc.closeAll(ctx, observers, cands)

	res := &rc.res
	res.StoppedBy, res.Elapsed = out.StoppedBy, out.Elapsed()
	res.Safety = e.checker.Result().Safety
	addHistogram(res, figures.LatencyObserve, crowd.observe)
	addHistogram(res, figures.LatencyObserveAll, crowd.last)
	addHistogram(res, figures.LatencyFailover, e.latency)
	res.Series = MergeSeries(e.series.interval, res.Elapsed, e.series)
	// Each observer needs one notification per failover.
	ops := res.Ops.Succeeded
	rc.fill(out, ops, v.ClientCounts, ops*int64(c.Clients))
	if ev, ok := res.PerOp[figures.WatchEvents.Key]; ok {
		res.PerOp[figures.WatchEventsPerObserver.Key] = ev / float64(c.Clients)
		if ops > 0 {
			res.PerOp[figures.CandidateWatchEvents.Key] = float64(crowd.candEvents) / float64(ops)
		}
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d candidates besides the %d observers; client-side counts are the observers'", candidates, c.Clients))
	for k, n := range e.errs {
		res.Errors[k] += n
	}
	rc.finish(ctx, observers.Lost()+cands.Lost(), int64(e.killed), path)
	return rc.done(), nil
}

// crowd is the observers of one case: what each knows and since when.
type crowd struct {
	e          *electionRun
	known      []atomic.Int64 // token of the leader observer i last learned
	knownAt    []atomic.Int64 // offset at which it learned it
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
