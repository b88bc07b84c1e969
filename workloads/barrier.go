package workloads

import (
	"context"
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
	"github.com/zkbench/zkbench/workloads/measure"
)

// BarrierWorkload runs R rounds of a double barrier among N participants,
// each on its own session: every round every participant enters, computes
// for ParamWork, and leaves; each round has its own path. The case's Ops
// count complete rounds (R is --ops, or ParamRounds); --duration bounds the
// case as a whole (rounds not finished by then are reported as failed);
// --warmup does not apply.
//
// It records each participant's Enter and Leave latency ("enter",
// "leave"), per round the release of Enter from the last arrival to the
// last participant through ("enter_release"), the release of Leave
// ("leave_release") and the round ("round"), and per participant per round
// the notifications, client requests and server requests (PerOp
// "*_per_participant"), with the requests of Enter and of Leave apart
// ("requests_per_enter", "requests_per_leave"). Elapsed is the total time of
// the rounds. Safety: nobody passes Enter before N arrived, nor Leave
// before all N called it.
type BarrierWorkload struct{}

// NewBarrier returns the barrier workload.
func NewBarrier() *BarrierWorkload { return &BarrierWorkload{} }

// barrierSpec declares the double barrier workload.
func barrierSpec() Spec {
	return Spec{
		Name:    "barrier",
		Summary: "one double-barrier round: enter, work --work, leave",
		Unit:    figures.Round,
		Variants: fromFamily(variants.DoubleBarriers(),
			VariantSpec{Name: variants.Naive, Class: figures.Naive},
			VariantSpec{Name: variants.Fair, Class: figures.HerdFree}),
		Latencies: []figures.Latency{figures.LatencyEnter, figures.LatencyLeave, figures.LatencyEnterRelease,
			figures.LatencyLeaveRelease, figures.LatencyRound},
		Params: []Param{
			{Key: ParamWork, Type: ParamDuration, Default: "0s", Help: "computation between Enter and Leave"},
			{Key: ParamJitter, Type: ParamDuration, Default: "0s", Help: "spread arrivals and computations by a random [0, jitter)"},
			{Key: ParamRounds, Type: ParamCount, Default: "20", Help: "rounds per case when --ops is 0"},
		},
		Abilities: Abilities{Presets: []string{PresetPaperBarrier}},
		New:       func() Workload { return NewBarrier() },
	}
}

// Run runs one barrier case. See Workload.Run.
func (bw *BarrierWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, barrierSpec(), c, 0, &barrierCase{})
}

// barrierCase is one barrier case: its participants and the checker of
// their rounds.
type barrierCase struct {
	parts   []*participant
	checker *BarrierChecker
}

func (bc *barrierCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	s := d.settings()
	v := variantOf(s, variants.DoubleBarriers())
	rounds, work, jitter := s.opsOr(ParamRounds), s.duration(ParamWork), s.duration(ParamJitter)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	clients, err := d.open(ctx, c.Clients, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	base := c.Namespace + "/barrier"
	d.keep = []string{base}
	checker := NewBarrierChecker(c.Clients)
	start := time.Now()
	now := func() time.Duration { return time.Since(start) }
	parts := make([]*participant, c.Clients)
	for i := range parts {
		parts[i] = &participant{id: i, s: clients.Sessions[i], c: clients.Counters[i], now: now,
			checker: checker, work: work, jitter: jitter, enter: results.NewRecorder(), leave: results.NewRecorder()}
	}
	bc.parts, bc.checker = parts, checker
	parts[0].live = c.Live // a round counts once: when participant 0 has left it
	c.log().Progress(fmt.Sprintf("  %d participants connected; %d rounds", c.Clients, rounds))
	bound := d.bound(ctx)
	defer bound.Release()
	return d.measureRounds(ctx, clients, start, bound, func(time.Duration) bool {
		var wg sync.WaitGroup
		for _, p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					if !p.round(bound.Ctx(), v.New(p.s, fmt.Sprintf("%s/round-%d", base, r), c.Clients), r) {
						bound.Fail() // one participant cannot finish: nobody can
						return
					}
				}
			}()
		}
		wg.Wait()
		return false
	}), nil
}

// participant is one client of the barrier. Its recorders are its own.
type participant struct {
	id      int
	s       backends.Session
	c       *instrument.Counters
	now     func() time.Duration
	checker *BarrierChecker
	work    time.Duration
	jitter  time.Duration

	live                 *measure.Live // nil but for one participant
	enter, leave         *hdrhistogram.Histogram
	rounds               int64 // rounds completed
	enterReqs, leaveReqs int64
	enterWoke, leaveWoke int64
	errs                 map[string]int64
	firstErr             error
}

// round runs one round; false if the participant could not finish it.
func (p *participant) round(ctx context.Context, db recipes.DoubleBarrier, r int) bool {
	if !sleepCtx(ctx, p.spread()) {
		return false
	}
	before := p.c.Snapshot()
	t0 := p.now()
	p.checker.Arrive(r, t0)
	if _, err := db.Enter(ctx); err != nil {
		return p.failed(ctx, "enter", err)
	}
	t1 := p.now()
	p.checker.Entered(r, p.id, t1)
	results.Record(p.enter, t1-t0)
	entered := p.c.Snapshot()
	if !sleepCtx(ctx, p.work+p.spread()) {
		return false
	}
	t2 := p.now()
	p.checker.Leaving(r, t2)
	if _, err := db.Leave(ctx); err != nil {
		return p.failed(ctx, "leave", err)
	}
	t3 := p.now()
	p.checker.Left(r, p.id, t3)
	results.Record(p.leave, t3-t2)
	left := p.c.Snapshot()
	p.rounds++
	p.live.Op()
	p.enterReqs += entered.TotalRequests() - before.TotalRequests()
	p.leaveReqs += left.TotalRequests() - entered.TotalRequests()
	p.enterWoke += entered.WatchEvents - before.WatchEvents
	p.leaveWoke += left.WatchEvents - entered.WatchEvents
	return true
}

// spread is a uniform random delay in [0, jitter).
func (p *participant) spread() time.Duration {
	if p.jitter <= 0 {
		return 0
	}
	return rand.N(p.jitter)
}

func (p *participant) failed(ctx context.Context, phase string, err error) bool {
	if ctx.Err() != nil {
		return false // the case stopped: withdrawn, not an error
	}
	if p.errs == nil {
		p.errs = map[string]int64{}
	}
	p.errs[phase+"_"+errorKind(err)]++
	if p.firstErr == nil {
		p.firstErr = err
	}
	return false
}
