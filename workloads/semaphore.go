package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes/fair"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
	"github.com/zkbench/zkbench/workloads/measure"
)

// ParamPermits: the semaphore workload's permits, K, the clients that hold
// it at once (--permits). Default DefaultPermits.
const ParamPermits = "permits"

// DefaultPermits is the semaphore's permits in a run without --permits.
const DefaultPermits = "3"

// SemaphoreWorkload is the counting semaphore benchmark: N clients, each on
// its own session with its own semaphore of K permits (ParamPermits) from
// the variant's factory (recipes/variants.Semaphores), contend for one
// semaphore at <namespace>/semaphore. K of them hold at once; the rest
// wait.
//
// The load model is the lock workload's, through the one lock client loop
// (lockClient): closed loop (Rate 0) acquire, hold for Hold, release,
// think for Think; open loop (Rate > 0) acquisitions scheduled at Rate per
// second in total, latency from the scheduled time.
//
// It records acquire latency, grants per interval, the common figures
// (requests, bytes, watch events and wasted wake-ups per acquisition, the
// servers' counts; a wait's notifications beyond the stages it needs,
// stagesOf, are wasted) and the holders: a safety.SemaphoreChecker sees each
// grant (after Acquire returned) and each release (before Release is
// sent), counts the holders at every grant and sweeps the history of
// sections afterwards. More than K inside at any instant is a violation;
// the holders at a grant, on average and at most, are a note.
type SemaphoreWorkload struct{}

// NewSemaphore returns the semaphore workload.
func NewSemaphore() *SemaphoreWorkload { return &SemaphoreWorkload{} }

// semaphoreSpec declares the semaphore workload.
func semaphoreSpec() Spec {
	return Spec{
		Name:    "semaphore",
		Summary: "one acquisition of one of --permits permits (acquire, hold --hold, release, think --think)",
		Unit:    figures.Acquisition,
		Variants: fromFamily(variants.Semaphores(),
			VariantSpec{Name: variants.Naive, Class: figures.Naive},
			VariantSpec{Name: variants.Fair, Class: figures.HerdFree}),
		Latencies: []figures.Latency{figures.LatencyAcquire},
		Params: []Param{{Key: ParamPermits, Type: ParamCount, Default: DefaultPermits,
			Help: "permits of the semaphore: how many clients hold it at once"}},
		Knobs: []Knob{KnobHold, KnobThink, KnobRate, KnobWarmup},
		// The lock's critical section, for the same reason: a default run
		// a 2-core machine carries.
		DefaultHold: DefaultLockHold,
		New:         func() Workload { return NewSemaphore() },
	}
}

// stagesOf is how many notifications a semaphore variant's wait needs at
// most, each moving it forward: naive's one (the release that lets it in),
// fair's two (the gate's handoff that makes it the first waiter, then the
// release that lets it in). A grant's wake-ups beyond them were wasted.
var stagesOf = map[string]int64{variants.Naive: 1, variants.Fair: 2}

// Run runs one semaphore case. See Workload.Run.
func (w *SemaphoreWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, semaphoreSpec(), c, 0, &semaphoreCase{})
}

// semaphoreCase is one semaphore case: its clients' recorders, the
// acquire histogram they share, and the checker of their grants.
type semaphoreCase struct {
	recs         []*semRecorder
	load         acquireLoad
	checker      *safety.SemaphoreChecker
	instrumented bool
}

func (sc *semaphoreCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	if c.Shard != nil || c.Processes != nil {
		return measure.Outcome{}, fmt.Errorf("%w: the semaphore workload runs every client in this process", ErrBadCase)
	}
	s := d.settings()
	v, permits := variantOf(s, variants.Semaphores()), s.count(ParamPermits)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	sc.instrumented = v.ClientCounts
	clients, err := d.open(ctx, c.Clients, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	path := c.Namespace + "/semaphore"
	gate, leases := fair.SemaphorePaths(path)
	d.keep = []string{path, gate, leases}
	window := measure.NewWindow(c.Config, c.Live)
	sc.checker = safety.NewSemaphoreChecker(permits)
	sc.load = newAcquireLoad(c)
	sc.recs = make([]*semRecorder, c.Clients)
	loops := make([]*lockClient, c.Clients)
	for i := range loops {
		m, err := v.New(clients.Sessions[i], path, permits)
		if err != nil {
			return measure.Outcome{}, fmt.Errorf("workloads: semaphore %s for client %d: %w", c.Variant, i, err)
		}
		sc.recs[i] = newSemRecorder(i, window, sc.checker, sc.load.acquire, sc.load.interval, stagesOf[c.Variant])
		loops[i] = &lockClient{lock: m, session: clients.Sessions[i], hold: c.Config.Hold, think: c.Config.Think,
			pace: sc.load.pace, now: window.Now}
	}
	c.log().Progress(fmt.Sprintf("  %d clients connected; %d permits; measuring", c.Clients, permits))
	ids := make([]int, c.Clients)
	for i := range ids {
		ids[i] = i
	}
	return d.measure(ctx, window, func(runCtx context.Context) <-chan struct{} {
		return measure.RunEach(runCtx, ids, func(i int, ctx context.Context) {
			if err := loops[i].run(ctx, sc.recs[i]); err != nil {
				sc.recs[i].note = fmt.Sprintf("client %d stopped: %v", i, err)
			}
		})
	}, func() measure.Snapshot { return d.snapshot(ctx, clients) }, drainNames{plural: "clients",
		stuck: func(limit time.Duration) error {
			return fmt.Errorf("workloads: %d semaphore clients did not stop within %v of the end of the case", c.Clients, limit)
		}})
}
