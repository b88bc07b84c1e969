package workloads

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// FailoverWorkload measures leader failover: N candidates, each on its own
// session with a Latch of the variant, elect a leader; the leader's session
// is ended abruptly (ParamKill: closed, or expired on the server) and the
// case measures the time from that moment until another candidate acts as
// leader ("failover"), how long the old leader took to learn it lost
// ("lost_notice"), and, per failover, the watch notifications the clients
// received (the herd: 1 for herd-free variants, N-1 for the naive one), the
// wasted ones, and the requests the clients sent and the servers handled.
//
// Between failovers it waits until every waiting candidate has a watch open
// again (for the variants the instrument sees) and then until the clients'
// requests stay quiet for ParamSettle, so that every waiter is asleep
// again before the next kill.
// Killed candidates are not replaced: a case runs min(K, N-1) failovers,
// K being --ops or ParamFailovers. The case's Ops count failovers.
//
// Safety: a candidate acts from its Await's return until its session is
// killed (close: it crashed) or, when the session is expired on the server,
// until its Leadership.Lost closes (it learns late); two acting at once is a
// violation, which expired sessions can cause (the ephemeral-node pitfall).
type FailoverWorkload struct{}

// NewFailover returns the failover workload.
func NewFailover() *FailoverWorkload { return &FailoverWorkload{} }

// failoverSpec declares the leader failover workload.
func failoverSpec() Spec {
	return Spec{
		Name:      "failover",
		Summary:   "one leader loss (session closed, expired with --kill expire, or its process dead with --kill crash) until a new leader acts",
		Unit:      figures.Failover,
		Variants:  electionVariants(),
		Latencies: []figures.Latency{figures.LatencyFailover, figures.LatencyLostNotice},
		Params:    electionParams(),
		Abilities: Abilities{PlannedFailover: true},
		New:       func() Workload { return NewFailover() },
	}
}

// electionVariants are the election workloads' variants.
func electionVariants() []VariantSpec {
	return fromFamily(variants.Elections(),
		VariantSpec{Name: variants.Naive, Class: figures.Naive},
		VariantSpec{Name: variants.Fair, Class: figures.HerdFree},
		VariantSpec{Name: variants.Native, Class: figures.Baseline})
}

// electionParams are the parameters of the failover and observers
// workloads.
func electionParams() []Param {
	return []Param{
		{Key: ParamFailovers, Type: ParamCount, Default: "10", Help: "leader kills per case when --ops is 0"},
		{Key: ParamKill, Type: ParamChoice, Choices: []string{KillClose, KillExpire, KillCrash}, Default: KillClose,
			Help: "how the leader's session ends: close (by its client), expire (on the server at once: etcd revokes the lease, ZooKeeper closes the session from a second connection), " +
				"or crash (its process dies, a random third to two thirds of the session timeout after the candidates settle: the connection closes with no close, and the server ends the session when the session timeout or lease TTL runs out, which the failover then includes)"},
		{Key: ParamSettle, Type: ParamDuration, Default: "100ms", Help: "quiet time before each kill, once every waiter has a watch open again (so every waiter is asleep)"},
		{Key: ParamStepTimeout, Type: ParamPause, Default: "1m0s", Help: "bound on one failover"},
	}
}

// electionVariant is the case's election variant (variantOf); one that
// does not run on the case's backend sticks as an error.
func electionVariant(s *caseSettings) variants.Variant[recipes.Election] {
	v, c := variantOf(s, variants.Elections()), s.c
	if s.err == nil && c.Backend != nil && !v.Supports(c.Backend.Kind()) {
		s.err = fmt.Errorf("%w: election variant %s does not run on %s", ErrUnknownVariant, c.Variant, c.Backend.Kind())
	}
	return v
}

// elected is one candidate's Await returning.
type elected struct {
	candidate int
	at        time.Duration
	lead      recipes.Leadership
}

// electionSettings are the parameters the failover and observers
// workloads share.
type electionSettings struct {
	failovers   int
	kill        string
	settle      time.Duration
	stepTimeout time.Duration
}

// readElectionSettings reads the election parameters of s's case.
func readElectionSettings(s *caseSettings) electionSettings {
	return electionSettings{failovers: s.opsOr(ParamFailovers), kill: s.choice(ParamKill), settle: s.duration(ParamSettle),
		stepTimeout: s.duration(ParamStepTimeout)}
}

// Run runs one failover case. See Workload.Run.
func (fw *FailoverWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, failoverSpec(), c, 0, &failoverCase{})
}

// failoverCase is one failover case: its election, and the variant's
// counting.
type failoverCase struct {
	e            *electionRun
	instrumented bool
}

func (fc *failoverCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	s := d.settings()
	v, set := electionVariant(s), readElectionSettings(s)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	fc.instrumented = v.ClientCounts
	if c.Clients < 2 {
		return measure.Outcome{}, fmt.Errorf("%w: a failover needs at least 2 candidates", ErrBadCase)
	}
	clients, err := d.open(ctx, c.Clients, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	e, err := newElectionRun(ctx, d, v, clients, set)
	if err != nil {
		return measure.Outcome{}, err
	}
	fc.e = e
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.campaign(runCtx)
	out := e.failovers(ctx)
	stop()
	e.wg.Wait()
	// The killed leaders' sessions were ended on purpose.
	d.expectedLost = int64(e.killed)
	return out, nil
}

func (fc *failoverCase) collect(d *driver, out measure.Outcome) {
	res, e := &d.res, fc.e
	res.Safety = e.checker.Result().Safety
	addHistogram(res, figures.LatencyFailover, e.latency)
	addHistogram(res, figures.LatencyLostNotice, e.lostNotice)
	res.Series = measure.MergeSeries(e.series.Interval(), res.Elapsed, e.series)
	d.fill(out, res.Ops.Succeeded, fc.instrumented, res.Ops.Succeeded)
	for k, n := range e.errs {
		res.Errors[k] += n
	}
}

// newElectionRun is the election of a case among the sessions of
// candidates, each with a latch of variant v on the case's election path,
// which the leftover check keeps. A case whose kill (set.kill) cannot end
// the first candidate's session is refused with endSession's error.
func newElectionRun(ctx context.Context, d *driver, v variants.Variant[recipes.Election], candidates *measure.Clients, set electionSettings) (*electionRun, error) {
	first, be := candidates.Sessions[0], d.c.Backend
	if set.kill == KillExpire && !canExpire(first, be) {
		return nil, endSession(ctx, first, be, KillExpire)
	}
	if set.kill == KillCrash {
		if find[sessionCrasher](first) == nil {
			return nil, endSession(ctx, first, be, KillCrash)
		}
		if c := find[interface{ CanCrash() error }](first); c != nil {
			if err := c.CanCrash(); err != nil {
				return nil, fmt.Errorf("%w: %s=%s: %w", ErrBadCase, ParamKill, KillCrash, err)
			}
		}
	}
	n := len(candidates.Sessions)
	e := &electionRun{
		d: d, clients: candidates, set: set, path: d.c.Namespace + "/election", checker: NewLeaderChecker(n),
		start: time.Now(), wins: make(chan elected, n),
		latency: results.NewRecorder(), lostNotice: results.NewRecorder(),
		lostAt: make([]atomic.Int64, n), dead: make([]atomic.Bool, n), won: make([]atomic.Bool, n), out: make([]atomic.Bool, n),
		instrumented: v.ClientCounts, series: measure.NewSeriesRecorder(measure.SeriesInterval(d.c.Config)),
	}
	d.keep = []string{e.path}
	for i, s := range candidates.Sessions {
		e.latches = append(e.latches, v.New.Latch(s, e.path, fmt.Sprintf("c%d", i)))
	}
	return e, nil
}

// electionRun is one failover case in progress.
type electionRun struct {
	d          *driver
	clients    *measure.Clients
	set        electionSettings
	path       string // the election's node, which the leftover check keeps
	checker    *LeaderChecker
	latches    []recipes.Latch
	start      time.Time
	wins       chan elected
	latency    *hdrhistogram.Histogram
	lostNotice *hdrhistogram.Histogram
	lostAt     []atomic.Int64 // offset+1 at which candidate i's term was lost
	dead       []atomic.Bool  // candidate i was killed and acts no more (kill close or crash)
	won        []atomic.Bool  // candidate i has been elected
	out        []atomic.Bool  // candidate i's Await failed: it waits no more
	// instrumented: the variant's requests and watches go through the
	// instrument, which can say whether a waiter has a watch open.
	instrumented bool
	series       *measure.SeriesRecorder
	killed       int
	wg           sync.WaitGroup
	mu           sync.Mutex
	errs         map[string]int64
}

func (e *electionRun) now() time.Duration { return time.Since(e.start) }

// waiting reports whether candidate i is waiting to be elected: it has
// neither won nor left the election.
func (e *electionRun) waiting(i int) bool { return !e.won[i].Load() && !e.out[i].Load() }

// campaign starts every candidate: Await, report the win, act until the
// term is lost or the case ends, then close the latch.
func (e *electionRun) campaign(ctx context.Context) {
	for i, l := range e.latches {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer func() {
				if e.dead[i].Load() {
					return // a dead process tidies nothing: its session is over
				}
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
				_ = l.Close(cctx)
				cancel()
			}()
			lead, err := l.Await(ctx)
			if err != nil {
				e.out[i].Store(true)
				if ctx.Err() == nil && !errors.Is(err, backends.ErrSessionLost) {
					e.countErr(errorKind(err), err)
				}
				return
			}
			e.won[i].Store(true)
			at := e.now()
			e.checker.Begin(i, lead.Token, at, true)
			e.wins <- elected{candidate: i, at: at, lead: lead}
			select {
			case <-lead.Lost:
				at := e.now()
				e.lostAt[i].Store(int64(at) + 1)
				e.checker.End(i, at)
			case <-ctx.Done():
				e.checker.End(i, e.now())
			}
		}()
	}
}

func (e *electionRun) countErr(kind string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.errs == nil {
		e.errs = map[string]int64{}
	}
	if e.errs[kind] == 0 {
		e.d.res.Notes = append(e.d.res.Notes, fmt.Sprintf("first %s error: %v", kind, err))
	}
	e.errs[kind]++
}
