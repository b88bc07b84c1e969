package workloads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// Parameters of the twophase workload.
const (
	// ParamAbortShare: the fraction of votes that are abort, 0 to 1.
	// Default 0.
	ParamAbortShare = "abort_share"
	// ParamVoteSpread: each site processes the transaction for a uniform
	// random time in [0, spread) between joining and voting. Without it
	// the votes come in one burst, which the watchers' re-arming folds
	// into few notifications. Default 0.
	ParamVoteSpread = "vote_spread"
)

// txStepTimeout bounds one transaction once it has begun.
const txStepTimeout = time.Minute

// TwoPhaseWorkload runs two-phase commits one after another among N sites
// (the case's clients) and a coordinator (a session of its own, client N):
// the coordinator begins each transaction at its own path, every site joins,
// processes it for a random time up to ParamVoteSpread and votes (abort
// with probability ParamAbortShare), and each site waits for the decision. The case's Ops count decided transactions (--ops, else
// as many as --duration allows; one in flight when it ends runs to its
// decision). A site whose session is lost (--fault expire-session:C) takes
// no part in later transactions; if it is lost before it joined, the
// coordinator votes abort in its name (TxCoordinator.AbortFor).
//
// It records each site's time from the transaction's beginning to its
// decision ("decide") and the whole transaction ("transaction", to the last
// site's decision), the share of transactions aborted, and, per
// transaction, the notifications and requests of every client and per site
// (PerOp "*_per_participant"). Safety: every site that decided decided the
// same (and so did a deciding coordinator); a commit only where every site
// voted commit and no site's session ended before the first decision.
type TwoPhaseWorkload struct{}

// NewTwoPhase returns the twophase workload.
func NewTwoPhase() *TwoPhaseWorkload { return &TwoPhaseWorkload{} }

// twoPhaseSpec declares the two-phase commit workload.
func twoPhaseSpec() Spec {
	return Spec{
		Name:    "twophase",
		Summary: "one two-phase commit among N sites (--abort-share, --vote-spread)",
		Unit:    figures.Transaction,
		Variants: fromFamily(variants.TwoPhases(),
			VariantSpec{Name: variants.AllWatch, Class: figures.Naive},
			VariantSpec{Name: variants.Coordinated, Class: figures.HerdFree}),
		Latencies: []figures.Latency{figures.LatencyDecide, figures.LatencyTransaction},
		Params: []Param{
			{Key: ParamAbortShare, Type: ParamShare, Default: "0", Help: "the fraction of votes that are abort, 0 to 1"},
			{Key: ParamVoteSpread, Type: ParamDuration, Default: "0s", Help: "each site votes a random [0, spread) after joining (0: the votes come in one burst)"},
		},
		New: func() Workload { return NewTwoPhase() },
	}
}

// Run runs one twophase case. See Workload.Run.
func (w *TwoPhaseWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, twoPhaseSpec(), c, 1, &twoPhaseCase{})
}

// twoPhaseCase is one twophase case: its transactions and their series.
type twoPhaseCase struct {
	t  *txRounds
	sr *measure.SeriesRecorder
}

func (tc *twoPhaseCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	s := d.settings()
	v := variantOf(s, variants.TwoPhases())
	share, spread := s.float(ParamAbortShare), s.duration(ParamVoteSpread)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	clients, err := d.open(ctx, c.Clients+1, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	base := c.Namespace + "/twophase"
	d.keep = []string{base}
	bound := d.bound(ctx)
	defer bound.Release()
	c.log().Progress(fmt.Sprintf("  %d sites and a coordinator connected; %.0f%% of votes abort", c.Clients, 100*share))
	start := time.Now()
	t := &txRounds{v: v, share: share, spread: spread, clients: clients, n: c.Clients, live: c.Live,
		decide: results.NewRecorder(), whole: results.NewRecorder()}
	t.now = func() time.Duration { return time.Since(start) }
	sr := measure.NewSeriesRecorder(measure.SeriesInterval(c.Config))
	tc.t, tc.sr = t, sr
	return d.measureRounds(ctx, clients, start, bound, func(begin time.Duration) bool {
		for k := 0; bound.Ctx().Err() == nil && (c.Config.Ops <= 0 || int64(k) < c.Config.Ops); k++ {
			if !t.transaction(ctx, fmt.Sprintf("%s/tx-%d", base, k)) {
				break
			}
			sr.Add(t.now() - begin)
		}
		return t.err != nil
	}), nil
}

// txRounds is the state of a case's transactions: sites are sessions
// 0..n-1, the coordinator session n.
type txRounds struct {
	v       variants.Variant[recipes.TwoPhase]
	share   float64
	spread  time.Duration
	clients *measure.Clients
	n       int
	now     func() time.Duration
	live    *measure.Live

	decide, whole            *hdrhistogram.Histogram
	issued, decided, aborted int64
	sitePasses               int64 // sites that took part, summed over decided transactions
	checked, violations      int64
	details                  []string
	siteLosses               int64
	err                      error
	errs                     map[string]int64
}

// txSite is one site's part in one transaction.
type txSite struct {
	// abortForErr: the coordinator's AbortFor for this site failed.
	abortForErr error
	commit      bool
	d           recipes.Decision
	err         error
	at          time.Duration
}

// transaction runs one transaction at path among the sites whose sessions
// live; false if the case cannot go on.
func (t *txRounds) transaction(ctx context.Context, path string) bool {
	var live []int
	for i := range t.n {
		if !sessionEnded(t.clients.Sessions[i]) {
			live = append(live, i)
		}
	}
	coordS := t.clients.Sessions[t.n]
	if len(live) == 0 || sessionEnded(coordS) {
		t.fail("start", errors.New("no live sites or coordinator"))
		return false
	}
	m := len(live)
	tctx, cancel := context.WithTimeout(ctx, txStepTimeout)
	defer cancel()
	t.issued++
	began := t.now()
	coord := t.v.New.Coordinator(coordS, path, m)
	if err := coord.Begin(tctx); err != nil {
		return t.fail("begin", err)
	}
	ended := false
	defer func() {
		if !ended { // a failed transaction's nodes go too
			ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txStepTimeout)
			defer cancel()
			_ = coord.End(ectx)
		}
	}()
	var coordD recipes.Decision
	var coordErr error
	sites := make([]txSite, m)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		coordD, coordErr = coord.Decide(tctx)
	}()
	for j, i := range live {
		sites[j].commit = rand.Float64() >= t.share
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &sites[j]
			site := t.v.New.Site(t.clients.Sessions[i], path, j, m)
			st.err = site.Join(tctx)
			if st.err != nil {
				// Nobody will ever list this site: the coordinator, which
				// knows its sites, votes abort for it.
				st.abortForErr = t.v.New.Coordinator(coordS, path, m).AbortFor(tctx, j)
			} else {
				if t.spread > 0 {
					sleepCtx(tctx, rand.N(t.spread))
				}
				st.d, st.err = site.Vote(tctx, st.commit)
			}
			st.at = t.now()
		}()
	}
	wg.Wait()
	for _, st := range sites {
		if st.abortForErr != nil {
			t.count("abort_for", st.abortForErr)
		}
	}
	if coordErr != nil {
		return t.fail("decide", coordErr)
	}
	t.check(path, sites, coordD, began)
	ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), txStepTimeout)
	defer ecancel()
	ended = true
	if err := coord.End(ectx); err != nil {
		return t.fail("end", err)
	}
	return ctx.Err() == nil
}

// check applies the safety rules to one transaction and records it.
func (t *txRounds) check(path string, sites []txSite, coordD recipes.Decision, began time.Duration) {
	var d recipes.Decision
	first, last := time.Duration(-1), time.Duration(0)
	allCommit, agree := true, true
	for _, st := range sites {
		allCommit = allCommit && st.commit
		if st.err != nil {
			continue
		}
		if d == "" {
			d = st.d
		}
		agree = agree && st.d == d
		if first < 0 || st.at < first {
			first = st.at
		}
		last = max(last, st.at)
	}
	if coordD != "" {
		agree = agree && (d == "" || coordD == d)
		d = coordD
	}
	if d == "" {
		t.fail("decide", fmt.Errorf("%s: no site decided: %w", path, firstSiteErr(sites)))
		return
	}
	lostEarly := false
	for _, st := range sites {
		if st.err != nil {
			t.siteLosses++
			t.count("site", st.err)
			lostEarly = lostEarly || (first < 0 || st.at < first)
		}
	}
	t.checked++
	switch {
	case !agree:
		t.violate(fmt.Sprintf("%s: the sites did not all decide the same", path))
	case d == recipes.Commit && !allCommit:
		t.violate(fmt.Sprintf("%s: committed although a site voted abort", path))
	case d == recipes.Commit && lostEarly:
		t.violate(fmt.Sprintf("%s: committed although a site's session ended before the first decision", path))
	}
	t.decided++
	if d == recipes.Abort {
		t.aborted++
	}
	t.sitePasses += int64(len(sites))
	for _, st := range sites {
		if st.err == nil {
			results.Record(t.decide, st.at-began)
		}
	}
	results.Record(t.whole, last-began)
	t.live.Op()
}

func firstSiteErr(sites []txSite) error {
	for _, st := range sites {
		if st.err != nil {
			return st.err
		}
	}
	return errors.New("no error")
}

func (t *txRounds) violate(detail string) {
	t.violations++
	if len(t.details) < 5 {
		t.details = append(t.details, detail)
	}
}

func (t *txRounds) count(phase string, err error) {
	if t.errs == nil {
		t.errs = map[string]int64{}
	}
	t.errs[phase+"_"+errorKind(err)]++
}

// fail records a failure that ends the case; false.
func (t *txRounds) fail(phase string, err error) bool {
	t.count(phase, err)
	if t.err == nil {
		t.err = fmt.Errorf("%s: %w", phase, err)
	}
	return false
}

// collect fills the case's result from the transactions.
func (tc *twoPhaseCase) collect(d *driver, o measure.Outcome) {
	res, t, sr := &d.res, tc.t, tc.sr
	res.Ops = results.Ops{Issued: t.issued, Succeeded: t.decided, Failed: t.issued - t.decided}
	res.Safety = results.Safety{Checked: t.checked, Violations: t.violations, Details: t.details}
	for k, v := range t.errs {
		res.Errors[k] += v
	}
	if t.err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped by a failure: %v", t.err))
	}
	if t.siteLosses > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d site sessions ended inside a transaction", t.siteLosses))
	}
	addHistogram(res, figures.LatencyDecide, t.decide)
	addHistogram(res, figures.LatencyTransaction, t.whole)
	res.Series = measure.MergeSeries(sr.Interval(), res.Elapsed, sr)
	// Every notification is needed: all-watch's sites must hear every vote.
	d.fill(o, res.Ops.Succeeded, true, math.MaxInt64)
	if t.decided > 0 {
		res.PerOp[figures.TxAborted.Key] = float64(t.aborted) / float64(t.decided)
		perSite := float64(t.sitePasses) / float64(t.decided)
		for _, f := range figures.Counts() {
			if v, ok := res.PerOp[f.Key]; ok {
				res.PerOp[figures.PerParticipant(f).Key] = v / perSite
			}
		}
	}
}
