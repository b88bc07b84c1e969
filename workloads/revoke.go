package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
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

// RevokeWorkload is the revocable shared lock benchmark: N clients, each
// on its own session with its own revocable lock (recipes/variants.
// Revocables), contend for one lock at <namespace>/revocable in a closed
// loop (mode drawn with ParamReadShare, default all writers; hold for
// Hold, think for Think), and one revoker on a session of its own
// repeatedly asks the lock's first holder to let go: it waits
// ParamRevokeEvery, lists the holders, and revokes the first. A revoked
// holder cleans up for ParamCleanup, writing once more to the shared
// register at the end of it, and releases.
//
// Its unit is the revocation. It records per revocation the time from the
// ask to the holder's release ("revoke": for forced, to the release or the
// revoker's delete, whichever came first) and from the ask to the next
// grant to another node ("revoke_to_grant"), the notifications the revoked
// holders received while holding (PerOp revoke_notifications, per revoked
// holding: one, the ask), forced revocations (forced_revocations), and the
// acquisitions' latency ("acquire") beside the common figures.
//
// Safety: sections from grant to the end of the hold or to the revocation
// are checked as a shared lock's (safety.RWChecker); writers write to one
// register (safety.Register) with their token at the grant and at the end
// of their hold or clean-up. With consent nothing is stale. Forced, a
// holder whose clean-up outlasts the grace writes after the next writer
// was granted: ParamFence off counts that write as a violation, on rejects
// it (Safety.Prevented).
type RevokeWorkload struct{}

// NewRevoke returns the revocable lock workload.
func NewRevoke() *RevokeWorkload { return &RevokeWorkload{} }

// revokeSpec declares the revocable lock workload.
func revokeSpec() Spec {
	return Spec{
		Name:    "revoke",
		Summary: "one revocation: a revoker asks the first holder (setData \"unlock\"), the holder cleans up --cleanup and releases",
		Unit:    figures.Revocation,
		Variants: fromFamily(variants.Revocables(0),
			VariantSpec{Name: variants.Consent, Class: figures.HerdFree},
			VariantSpec{Name: variants.Forced, Class: figures.HerdFree}),
		Latencies: []figures.Latency{figures.LatencyAcquire, figures.LatencyRevoke, figures.LatencyRevokeToGrant},
		Params: []Param{
			readShareParam("0"),
			fenceParam(),
			{Key: ParamGrace, Type: ParamDuration, Default: "100ms", Variants: []string{variants.Forced},
				Help: "how long after its ask the revoker deletes a holder's node that is still there"},
			{Key: ParamRevokeEvery, Type: ParamPause, Default: "50ms",
				Help: "the revoker's pause between one revocation's end and its next ask, and after a listing that found no holder"},
			{Key: ParamCleanup, Type: ParamDuration, Default: "0s",
				Help: "how long a revoked holder works, writing at the end, before it releases (longer than --grace: forced revocations take the lock from a holder still writing)"},
		},
		Knobs: []Knob{KnobHold, KnobThink, KnobWarmup},
		New:   func() Workload { return NewRevoke() },
	}
}

// Run runs one revocation case. See Workload.Run.
func (w *RevokeWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, revokeSpec(), c, 1, &revokeCase{})
}

// revokeCase is one revocation case: its holders and the revoker's state.
type revokeCase struct {
	holders      []*revokeHolder
	st           *revokeState
	instrumented bool
}

func (vc *revokeCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	if c.Config.Rate > 0 {
		return measure.Outcome{}, fmt.Errorf("%w: the revoke workload runs a closed loop only (no --rate)", ErrBadCase)
	}
	s := d.settings()
	grace := s.duration(ParamGrace)
	v := variantOf(s, variants.Revocables(grace))
	share, every, cleanup := s.float(ParamReadShare), s.duration(ParamRevokeEvery), s.duration(ParamCleanup)
	fenceMode := s.choice(ParamFence)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	vc.instrumented = v.ClientCounts
	clients, err := d.open(ctx, c.Clients+1, nil) // the last one is the revoker's
	if err != nil {
		return measure.Outcome{}, err
	}
	path := c.Namespace + "/revocable"
	d.keep = []string{path}
	window := measure.NewWindow(c.Config, c.Live)
	st := &revokeState{window: window, checker: safety.NewRWChecker(),
		fence:  safety.NewRegister(fenceMode == FenceOn, safety.WithRegisterDetails(maxViolationDetails)),
		revoke: results.NewRecorder(), toGrant: results.NewRecorder(), errs: map[string]int64{},
		series: measure.NewSeriesRecorder(measure.SeriesInterval(c.Config))}
	holders := make([]*revokeHolder, c.Clients)
	for i := range holders {
		holders[i] = &revokeHolder{id: i, lock: v.New.Lock(clients.Sessions[i], path), s: clients.Sessions[i],
			c: clients.Counters[i], st: st, share: share, hold: c.Config.Hold, think: c.Config.Think, cleanup: cleanup,
			rng: rand.New(rand.NewPCG(uint64(c.Repeat), uint64(i))), acquire: results.NewRecorder()}
	}
	rs := clients.Sessions[c.Clients]
	revoker := v.New.Revoker(rs)
	c.log().Progress(fmt.Sprintf("  %d clients and a revoker connected; a revocation every %v; measuring", c.Clients, every))
	vc.holders, vc.st = holders, st
	return d.measure(ctx, window, func(runCtx context.Context) <-chan struct{} {
		loops := make([]func(context.Context), 0, len(holders)+1)
		for _, h := range holders {
			loops = append(loops, h.run)
		}
		loops = append(loops, func(runCtx context.Context) {
			st.revokeLoop(runCtx, revoker, rs, clients.Counters[c.Clients], path, every)
		})
		return measure.RunEach(runCtx, loops, func(loop func(context.Context), ctx context.Context) { loop(ctx) })
	}, func() measure.Snapshot { return d.snapshot(ctx, clients) }, drainNames{plural: "clients",
		stuck: func(limit time.Duration) error {
			return fmt.Errorf("workloads: the revoke case's clients did not stop within %v of its end", limit)
		}})
}

func (vc *revokeCase) collect(d *driver, out measure.Outcome) {
	res, holders, st, instrumented := &d.res, vc.holders, vc.st, vc.instrumented
	acquire := results.NewRecorder()
	perClient := make([]int64, len(holders))
	var needed, notified, revoked, reads, grants int64
	for i, h := range holders {
		acquire.Merge(h.acquire)
		perClient[i] = h.grants
		needed += h.needed
		notified += h.notified
		revoked += h.revoked
		reads += h.reads
		grants += h.grants
	}
	res.Ops = st.ops
	res.Series = measure.MergeSeries(measure.SeriesInterval(d.c.Config), res.Elapsed, st.series)
	res.Ops.Issued = res.Ops.Succeeded + res.Ops.Failed + res.Ops.StillWaiting
	for k, n := range st.errs {
		res.Errors[k] += n
	}
	if st.firstErr != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("first revocation error: %v", st.firstErr))
	}
	for name, h := range map[figures.Latency]*hdrhistogram.Histogram{figures.LatencyAcquire: acquire, figures.LatencyRevoke: st.revoke, figures.LatencyRevokeToGrant: st.toGrant} {
		addHistogram(res, name, h)
	}
	res.Fairness = results.Fairness{Jain: results.JainIndex(perClient)}
	res.Safety = st.checker.Safety()
	stale := addFence(&res.Safety, st.fence)
	needed += notified + st.noticed // the ask to the holder, the release to the revoker
	d.fill(out, res.Ops.Succeeded, instrumented, needed)
	if n := res.Ops.Succeeded; n > 0 {
		res.PerOp[figures.ForcedRevocations.Key] = float64(st.forced) / float64(n)
		if instrumented {
			if revoked > 0 {
				res.PerOp[figures.RevokeNotifications.Key] = float64(notified) / float64(revoked)
			}
			res.PerOp[figures.NecessaryWakeups.Key] = float64(needed) / float64(n)
		}
	}
	if grants > 0 {
		res.PerOp[figures.ReadShare.Key] = float64(reads) / float64(grants)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d revocations (%d forced, %d skipped: the holder had left before the ask), %d grants in the measured interval",
		res.Ops.Succeeded, st.forced, st.skipped, grants))
	if f := res.Safety.Fence; stale > 0 && f.Fenced {
		res.Notes = append(res.Notes, fmt.Sprintf("%d late writes of revoked holders: the fence rejected %d", stale, f.Rejected))
	} else if stale > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("STALE WRITES ACCEPTED %d times: holders revoked by force wrote after the next holder was granted (--fence on would reject them)", stale))
	}
}

// revokeState is what the holders and the revoker share.
type revokeState struct {
	window  *measure.Window
	checker *safety.RWChecker
	fence   *safety.Register

	mu       sync.Mutex
	asked    time.Duration // the pending revocation's ask; -1 none
	node     string        // the node it revokes
	measured bool
	revoke   *hdrhistogram.Histogram // revoker only
	toGrant  *hdrhistogram.Histogram // under mu
	ops      results.Ops             // revoker only
	series   *measure.SeriesRecorder // revoker only
	forced   int64
	skipped  int64
	noticed  int64 // the revoker's notifications of the releases it waited for
	errs     map[string]int64
	firstErr error
}

// ask records a revocation of node asked at offset at.
func (st *revokeState) ask(node string, at time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.asked, st.node, st.measured = at, node, st.window.Measured(at)
}

// granted tells of a grant to node at offset at: the first grant to
// another node after an ask ends that revocation's wait for a new holder.
func (st *revokeState) granted(node string, at time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.node == "" || node == st.node || at < st.asked {
		return
	}
	if st.measured {
		results.Record(st.toGrant, at-st.asked)
	}
	st.node = ""
}

// revokeLoop asks the first holder to let go every every, until ctx ends.
// Every attempt, one that found no holder or failed too, starts with the
// pause every (positive: a ParamPause), and one after a failure also
// with errorBackoff, so that the revoker never lists the lock in a tight
// loop.
func (st *revokeState) revokeLoop(ctx context.Context, rv recipes.Revoker, s backends.Session, counts *instrument.Counters, path string, every time.Duration) {
	for pause := every; sleepCtx(ctx, pause); {
		pause = every
		holders, err := rv.Holders(ctx, path)
		if err != nil {
			if ctx.Err() != nil || sessionEnded(s) {
				return
			}
			st.fail(err)
			pause = every + errorBackoff
			continue
		}
		if len(holders) == 0 {
			continue // no holder now: look again after every
		}
		asked := st.window.Now()
		st.ask(holders[0], asked)
		before := counts.Snapshot().WatchEvents
		forced, err := rv.Revoke(ctx, holders[0])
		done := st.window.Now()
		woke := counts.Snapshot().WatchEvents - before // the revoker's notice of the release
		switch {
		case err != nil && ctx.Err() != nil:
			if st.window.BeforeEnd(asked) {
				st.ops.StillWaiting++
			}
			return
		case errors.Is(err, recipes.ErrNotHolder):
			st.skipped++
			continue
		case err != nil:
			if st.window.Measured(done) {
				st.ops.Failed++
				st.fail(err)
			}
			if sessionEnded(s) {
				return
			}
			pause = every + errorBackoff
			continue
		}
		if st.window.Measured(done) && st.window.Claim() {
			st.ops.Succeeded++
			st.noticed += woke
			st.series.Add(done - st.window.MeasureStart())
			results.Record(st.revoke, done-asked)
			if forced {
				st.forced++
			}
		}
	}
}

func (st *revokeState) fail(err error) {
	st.errs[errorKind(err)]++
	if st.firstErr == nil {
		st.firstErr = err
	}
}

// revokeHolder is one client contending for the revocable lock.
type revokeHolder struct {
	id                    int
	lock                  recipes.Revocable
	s                     backends.Session
	c                     *instrument.Counters
	st                    *revokeState
	share                 float64
	hold, think, cleanup  time.Duration
	rng                   *rand.Rand
	acquire               *hdrhistogram.Histogram
	grants, reads, needed int64
	notified              int64 // notifications received while holding, when revoked
	revoked               int64 // measured holdings that were revoked
}

// run repeats: acquire, hold until the hold ends or a revocation comes
// (then clean up), release, think.
func (h *revokeHolder) run(ctx context.Context) {
	w := h.st.window
	for ctx.Err() == nil {
		mode := recipes.Write
		if h.rng.Float64() < h.share {
			mode = recipes.Read
		}
		ask := h.st.checker.Ask()
		asked := w.Now()
		g, err := h.lock.Acquire(ctx, mode)
		done := w.Now()
		if err != nil {
			if ctx.Err() != nil || sessionEnded(h.s) || !sleepCtx(ctx, errorBackoff) {
				return
			}
			continue
		}
		write := mode == recipes.Write
		h.st.granted(g.Node, done)
		h.st.checker.Enter(h.id, write, ask, g.Token, done)
		measured := w.Measured(done)
		if measured {
			h.grants++
			results.Record(h.acquire, done-asked)
			if !write {
				h.reads++
			}
			if g.Wakeups > 0 {
				h.needed++
			}
		}
		if write && g.Token != 0 {
			h.st.fence.Grant(g.Token, h.id)
			h.st.fence.Write(g.Token, h.id)
		}
		before := h.c.Snapshot().WatchEvents
		revoked := false
		t := time.NewTimer(max(h.hold, time.Nanosecond))
		select {
		case <-t.C:
		case <-g.Revoked:
			revoked = true
			if measured {
				h.notified += h.c.Snapshot().WatchEvents - before // the ask's notification
				h.revoked++
			}
		case <-g.Lost:
		case <-ctx.Done():
		}
		t.Stop()
		h.st.checker.Exit(h.id, w.Now())
		if revoked && h.cleanup > 0 {
			sleepCtx(ctx, h.cleanup)
		}
		if write && g.Token != 0 {
			h.st.fence.Write(g.Token, h.id) // a revoked holder's last write, at the end of its clean-up
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		err = h.lock.Release(rctx)
		cancel()
		if err != nil && sessionEnded(h.s) {
			return
		}
		if h.think > 0 && !sleepCtx(ctx, h.think) {
			return
		}
	}
}
