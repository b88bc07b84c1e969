package workloads

import (
	"context"
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// simpleStepTimeout bounds a simple barrier's waiters once the barrier is down.
const simpleStepTimeout = time.Minute

// Parameters of the simple-barrier workload.
const (
	// ParamPoll (declared with the config workload's parameters): how
	// often the polling variant re-reads the barrier node. Default 50ms
	// (fair.DefaultPoll).
	// ParamBarrierUp: how long the barrier stays up once every waiter is
	// waiting (has armed its watch or made its first read). Default 100ms.
	ParamBarrierUp = "barrier_up"
)

// SimpleBarrierWorkload runs rounds of the recipes page's simple barrier:
// one setter (a session of its own, beyond the N waiters) raises the
// barrier, N waiters wait on it, and once every waiter is waiting the
// barrier stays up for ParamBarrierUp and the setter removes it. Each round
// has its own path. The case's Ops count complete rounds (--ops, else as
// many as --duration allows). A round counts as issued once its removal
// began; one cut by --duration before that is not counted, one whose
// waiters do not all pass is failed.
//
// Removing the barrier must wake every waiter: the fair variant's watch
// notifies each once (N notifications a round, which is the job), the
// polling variant notifies nobody but reads every ParamPoll while it waits.
// It records each waiter's pass after the removal ("pass": from the
// setter's Remove to the waiter through), the last waiter's ("release")
// and the whole wait ("wait"), and per waiter per round the notifications,
// requests and bytes received (PerOp "*_per_participant", the waiters being
// the participants; the setter's two requests a round are left out of
// them). Safety: no waiter passes before the removal began.
type SimpleBarrierWorkload struct{}

// NewSimpleBarrier returns the simple-barrier workload.
func NewSimpleBarrier() *SimpleBarrierWorkload { return &SimpleBarrierWorkload{} }

// simpleBarrierSpec declares the simple barrier workload.
func simpleBarrierSpec() Spec {
	return Spec{
		Name:    "simple-barrier",
		Summary: "one simple-barrier round: raise, every waiter waits, up --barrier-up, remove",
		Unit:    figures.Round,
		Variants: fromFamily(variants.SimpleBarriers(0),
			VariantSpec{Name: variants.Polling, Class: figures.Other},
			VariantSpec{Name: variants.Fair, Class: figures.HerdFree}),
		Latencies: []figures.Latency{figures.LatencyRelease, figures.LatencyPass, figures.LatencyWait},
		Params: []Param{
			{Key: ParamPoll, Type: ParamPause, Default: "50ms", Help: "the polling variant's re-read interval"},
			{Key: ParamBarrierUp, Type: ParamDuration, Default: "100ms", Help: "how long the barrier stays up once every waiter is waiting"},
		},
		New: func() Workload { return NewSimpleBarrier() },
	}
}

// Run runs one simple barrier case. See Workload.Run.
func (sw *SimpleBarrierWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, simpleBarrierSpec(), c, 1, &simpleBarrierCase{})
}

// simpleBarrierCase is one simple barrier case: its rounds and their
// series.
type simpleBarrierCase struct {
	t  *simpleRounds
	sr *measure.SeriesRecorder
}

func (sc *simpleBarrierCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	s := d.settings()
	poll, up := s.duration(ParamPoll), s.duration(ParamBarrierUp)
	v := variantOf(s, variants.SimpleBarriers(poll))
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	clients, err := d.open(ctx, c.Clients+1, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	n := c.Clients
	base := c.Namespace + "/simple-barrier"
	d.keep = []string{base}
	bound := d.bound(ctx)
	defer bound.Release()
	c.log().Progress(fmt.Sprintf("  %d waiters and a setter connected; barrier up %v once all wait", n, up))
	t := &simpleRounds{n: n, v: v, up: up, s: clients.Sessions, c: clients.Counters,
		pass: results.NewRecorder(), release: results.NewRecorder(), wait: results.NewRecorder(), live: c.Live}
	start := time.Now()
	t.now = func() time.Duration { return time.Since(start) }
	sr := measure.NewSeriesRecorder(measure.SeriesInterval(c.Config))
	sc.t, sc.sr = t, sr
	return d.measureRounds(ctx, clients, start, bound, func(begin time.Duration) bool {
		for r := 0; c.Config.Ops <= 0 || int64(r) < c.Config.Ops; r++ {
			if !t.round(ctx, bound.Ctx(), fmt.Sprintf("%s/round-%d", base, r)) {
				break
			}
			t.done++
			sr.Add(t.now() - begin)
		}
		return t.err != nil
	}), nil
}

// simpleRounds is the state of a case's rounds: the waiters are sessions
// 0..n-1, the setter session n.
type simpleRounds struct {
	n    int
	v    variants.Variant[recipes.BarrierFactory]
	up   time.Duration
	s    []backends.Session
	c    []*instrument.Counters
	now  func() time.Duration
	live *measure.Live

	pass, release, wait *hdrhistogram.Histogram
	issued, done        int64
	waiterCounts        instrument.Counts // the waiters' counts over complete rounds
	early               []string          // waiters that passed a barrier still up
	earlyN              int64
	err                 error // the first failure that was not the case ending
	errs                map[string]int64
}

// round runs one round at path; false if it could not finish. runCtx
// bounds the round until the setter begins to remove the barrier (a round
// cut before that is not counted); from then on the round is issued and its
// waiters pass under caseCtx and simpleStepTimeout, so that the notifications a
// removal sent belong to a round that counts.
func (t *simpleRounds) round(caseCtx, runCtx context.Context, path string) bool {
	setter := t.v.New(t.s[t.n], path)
	if err := setter.Set(runCtx); err != nil {
		return t.failed(runCtx, "set", err)
	}
	before := make([]instrument.Counts, t.n)
	for i := range before {
		before[i] = t.c[i].Snapshot()
	}
	wctx, cancel := context.WithTimeout(caseCtx, t.up+simpleStepTimeout)
	defer cancel()
	ctx := caseCtx
	began := t.now()
	passed := make([]time.Duration, t.n)
	errs := make([]error, t.n)
	var wg sync.WaitGroup
	for i := range t.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = t.v.New(t.s[i], path).Wait(wctx)
			passed[i] = t.now()
		}()
	}
	removing, ok := t.lower(runCtx, setter, before)
	if !ok {
		cancel()
		wg.Wait()
		return false
	}
	t.issued++
	wg.Wait()
	var last time.Duration
	for i, err := range errs {
		if err != nil {
			return t.failed(ctx, "wait", err)
		}
		if passed[i] < removing {
			t.earlyN++
			if len(t.early) < 5 {
				t.early = append(t.early, fmt.Sprintf("%s: waiter %d passed %v before the barrier's removal began", path, i, removing-passed[i]))
			}
		}
		results.Record(t.pass, max(0, passed[i]-removing))
		results.Record(t.wait, passed[i]-began)
		last = max(last, passed[i])
	}
	results.Record(t.release, max(0, last-removing))
	for i := range t.n {
		t.waiterCounts = t.waiterCounts.Add(t.c[i].Snapshot().Sub(before[i]))
	}
	t.live.Op()
	return true
}

// lower waits until every waiter waits (a watch armed or a read made since
// before), keeps the barrier up for t.up and removes it; it returns when
// the removal began.
func (t *simpleRounds) lower(ctx context.Context, setter recipes.Barrier, before []instrument.Counts) (time.Duration, bool) {
	for i := 0; i < t.n; {
		now := t.c[i].Snapshot()
		if now.WatchesArmed > before[i].WatchesArmed || now.Requests["get"] > before[i].Requests["get"] {
			i++
			continue
		}
		if !sleepCtx(ctx, time.Millisecond) {
			return 0, false
		}
	}
	if !sleepCtx(ctx, t.up) {
		return 0, false
	}
	removing := t.now()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), simpleStepTimeout)
	defer cancel()
	if err := setter.Remove(rctx); err != nil {
		t.failed(ctx, "remove", err)
		return 0, false
	}
	return removing, true
}

func (t *simpleRounds) failed(ctx context.Context, phase string, err error) bool {
	if ctx.Err() != nil {
		return false // the case ended: the round is cut, not an error
	}
	if t.errs == nil {
		t.errs = map[string]int64{}
	}
	t.errs[phase+"_"+errorKind(err)]++
	if t.err == nil {
		t.err = fmt.Errorf("%s: %w", phase, err)
	}
	return false
}

// collect fills the case's result from the rounds.
func (sc *simpleBarrierCase) collect(d *driver, o measure.Outcome) {
	res, t, sr := &d.res, sc.t, sc.sr
	res.Ops = results.Ops{Issued: t.issued, Succeeded: t.done, Failed: t.issued - t.done}
	res.Safety = results.Safety{Checked: t.done * int64(t.n), Violations: t.earlyN, Details: t.early}
	for k, v := range t.errs {
		res.Errors[k] += v
	}
	if t.err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("first failure: %v", t.err))
	}
	addHistogram(res, figures.LatencyPass, t.pass)
	addHistogram(res, figures.LatencyRelease, t.release)
	addHistogram(res, figures.LatencyWait, t.wait)
	res.Series = measure.MergeSeries(sr.Interval(), res.Elapsed, sr)
	// A watching waiter needs one notification a round; a polling one none.
	needed := int64(0)
	if t.v.Name != variants.Polling {
		needed = t.done * int64(t.n)
	}
	d.fill(o, res.Ops.Succeeded, true, needed)
	if passes := float64(t.done) * float64(t.n); passes > 0 {
		w := t.waiterCounts
		res.PerOp[figures.PerParticipant(figures.WatchEvents).Key] = float64(w.WatchEvents) / passes
		res.PerOp[figures.PerParticipant(figures.Requests).Key] = float64(w.TotalRequests()) / passes
		res.PerOp[figures.PerParticipant(figures.BytesReceived).Key] = float64(w.BytesReceived) / passes
	}
	if res.Ops.Failed > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of %d rounds did not finish (stopped by %s)", res.Ops.Failed, res.Ops.Issued, res.StoppedBy))
	}
}
