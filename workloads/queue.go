package workloads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"golang.org/x/sync/errgroup"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// Parameters of the queue workload (results.Config.Params).
const (
	// ParamProducers: producers, each on its own session, beside the
	// case's clients, who are the consumers. Default 1.
	ParamProducers = "producers"
	// ParamPriorities: priority levels; each item gets one uniformly at
	// random (0 is the most urgent). Default 1 (no priorities).
	ParamPriorities = "priorities"
	// ParamItemSize: bytes of each item's data. Default 32.
	ParamItemSize = "item_size"
)

// QueueWorkload runs a distributed queue: ParamProducers producers put
// items in an open loop at Config.Rate items a second in all (each its
// share, with scheduled times: the delivery latency counts from the
// scheduled put, no coordinated omission), and the case's clients consume
// them, each holding an item for Config.Hold (its processing) before Ack.
// The unit operation is an item taken; --duration bounds the case, --ops
// ends it once that many items were taken; --warmup does not apply.
//
// It records the delivery latency (scheduled put to Take's return,
// "delivery"), put, take and ack latency, notifications, requests and bytes per
// item, failed claims and priority inversions per item, and checks the
// variant's delivery (QueueChecker). Consumers are clients 0 to N-1, so
// --fault expire-session:C ends a consumer's session; producers follow
// them.
type QueueWorkload struct{}

// NewQueue returns the queue workload.
func NewQueue() *QueueWorkload { return &QueueWorkload{} }

// queueSpec declares the queue workload.
func queueSpec() Spec {
	return Spec{
		Name: "queue",
		Summary: "one item taken: --producers put at --rate items/s in all (open loop), the --clients consumers take, " +
			"hold --hold, ack",
		Unit: figures.Item,
		Variants: fromFamily(variants.Queues(),
			VariantSpec{Name: variants.Naive, Class: figures.Naive},
			VariantSpec{Name: variants.Recipe, Class: figures.Naive},
			VariantSpec{Name: variants.Fair, Class: figures.HerdFree},
			VariantSpec{Name: variants.Handoff, Class: figures.HerdFree},
			VariantSpec{Name: variants.Native, Class: figures.Baseline, Why: errors.New("it is etcd's experimental recipe Queue")}),
		Latencies: []figures.Latency{figures.LatencyDelivery, figures.LatencyAck, figures.LatencyPut, figures.LatencyTake},
		Params: []Param{
			{Key: ParamProducers, Type: ParamCount, Default: "1", Help: "producers, each on its own session, beside the --clients consumers"},
			{Key: ParamPriorities, Type: ParamCount, Default: "1", Help: "priority levels (items get one at random, 0 most urgent); 1: none"},
			{Key: ParamItemSize, Type: ParamCount, Default: "32", Help: "bytes of each item's data"},
		},
		Knobs:       []Knob{KnobHold, KnobRate},
		DefaultRate: 100,
		New:         func() Workload { return NewQueue() },
	}
}

// queueRun is one case's shared state.
type queueRun struct {
	d        *driver
	checker  *QueueChecker
	start    time.Time
	hold     time.Duration
	taken    chan struct{} // one per first take, for --ops
	mu       sync.Mutex
	put      *hdrhistogram.Histogram
	take     *hdrhistogram.Histogram
	ack      *hdrhistogram.Histogram
	wakeups  int64
	failed   int64
	takes    int64
	ackFails int64
	// lastTake[i] is when consumer i's last Take returned an item; -1:
	// none yet.
	lastTake []time.Duration
	lost     []bool // consumer i stopped: its session was lost
}

func (q *queueRun) now() time.Duration { return time.Since(q.start) }

// Run runs one queue case. See Workload.Run.
func (qw *QueueWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	producers, err := queueSpec().Int(c.Config, ParamProducers)
	if err != nil {
		return results.Result{}, err
	}
	return drive(ctx, queueSpec(), c, producers, &queueCase{producers: producers})
}

// LargestListing is the most items a listing of the queue may hold
// (workloads.ListingSizer): every item the producers put in a case of cfg,
// --rate x --duration, should none be taken; 0 for a case bounded by
// --ops alone.
func (*QueueWorkload) LargestListing(cfg results.Config) int {
	if cfg.Duration <= 0 || cfg.Rate <= 0 {
		return 0
	}
	return int(math.Ceil(cfg.Rate * cfg.Duration.Seconds()))
}

// queueCase is one queue case: its run, its consumers (asked for stranded
// items once their sessions closed) and the variant.
type queueCase struct {
	producers int
	prios     int
	q         *queueRun
	cons      []recipes.Consumer
	v         variants.Variant[variants.QueueVariant]
}

func (qc *queueCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c, producers := d.c, qc.producers
	s := d.settings()
	v := variantOf(s, variants.Queues())
	if s.err == nil && !v.Supports(c.Backend.Kind()) {
		return measure.Outcome{}, fmt.Errorf("%w: queue variant %s does not run on %s", ErrUnknownVariant, v.Name, c.Backend.Kind())
	}
	prios, size := s.count(ParamPriorities), s.count(ParamItemSize)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	switch {
	case c.Config.Rate <= 0:
		return measure.Outcome{}, fmt.Errorf("%w: the queue's producers run an open loop: give --rate (items per second in all)", ErrBadCase)
	case prios > recipes.MaxPriority+1:
		return measure.Outcome{}, fmt.Errorf("%w: %d priorities: at most %d", ErrBadCase, prios, recipes.MaxPriority+1)
	case prios > 1 && !v.New.Priorities:
		return measure.Outcome{}, fmt.Errorf("%w: the %s queue has no priorities (etcd's PriorityQueue writes a key outside the namespace)", ErrBadCase, v.Name)
	}
	cfg := recipes.QueueConfig{Priorities: prios}
	qc.v, qc.prios = v, prios
	clients, err := d.open(ctx, c.Clients+producers, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	path := c.Namespace + "/queue"
	d.keep = []string{path, path + "/" + recipes.QueueItemsDir, path + "/" + recipes.QueueClaimsDir, path + "/" + recipes.QueueIdleDir}
	q := &queueRun{d: d, checker: NewQueueChecker(v.New.Delivery), start: time.Now(), hold: c.Config.Hold,
		taken: make(chan struct{}, 1024), put: results.NewRecorder(), take: results.NewRecorder(), ack: results.NewRecorder()}
	q.lastTake, q.lost = make([]time.Duration, c.Clients), make([]bool, c.Clients)
	for i := range q.lastTake {
		q.lastTake[i] = -1
	}
	qc.q = q
	cons := make([]recipes.Consumer, c.Clients)
	qc.cons = cons
	prods := make([]recipes.Producer, producers)
	for i := range cons {
		if cons[i], err = v.New.Consumer(clients.Sessions[i], path, cfg); err != nil {
			return measure.Outcome{}, err
		}
	}
	for i := range prods {
		if prods[i], err = v.New.Producer(clients.Sessions[c.Clients+i], path, cfg); err != nil {
			return measure.Outcome{}, err
		}
	}
	c.log().Progress(fmt.Sprintf("  %d consumers, %d producers connected; %.0f items/s", c.Clients, producers, c.Config.Rate))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var o measure.Outcome
	o.Before, o.Start, o.Base = d.snapshot(ctx, clients), q.now(), q.start
	c.Live.Start()
	var wg sync.WaitGroup
	for i, cn := range cons {
		wg.Add(1)
		go func() { defer wg.Done(); q.consume(runCtx, ctx, i, cn, clients.Sessions[i], c.Live) }()
	}
	interval := time.Duration(float64(time.Second) * float64(producers) / c.Config.Rate)
	for i, p := range prods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.produce(runCtx, i, p, interval, time.Duration(i)*interval/time.Duration(producers), prios, size)
		}()
	}
	o.StoppedBy = q.wait(ctx, runCtx, c.Config)
	stop()
	wg.Wait()
	o.End, o.After = q.now(), d.snapshot(ctx, clients)
	q.drainQueue(ctx, clients.Sessions[c.Clients], path, v.Name == variants.Native)
	return o, nil
}

// wait blocks until the case's bound: the duration, --ops items taken, or
// ctx's end.
func (q *queueRun) wait(ctx, runCtx context.Context, cfg results.Config) results.StopReason {
	var timeout <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		timeout = t.C
	}
	var n int64
	var ended measure.Stop
	for {
		select {
		case <-ctx.Done():
		case <-runCtx.Done():
			ended.Failed = true
		case <-timeout:
			ended.TimedOut = true
		case <-q.taken:
			if n++; cfg.Ops <= 0 || n < cfg.Ops {
				continue
			}
		}
		ended.Interrupted = ctx.Err() != nil
		return ended.Reason()
	}
}

// produce puts items at its scheduled times until ctx ends.
func (q *queueRun) produce(ctx context.Context, id int, p recipes.Producer, interval, phase time.Duration, prios, size int) {
	base := q.now() + phase
	for k := 0; ; k++ {
		at := base + time.Duration(k)*interval
		if !sleepCtx(ctx, at-q.now()) {
			return
		}
		item := fmt.Sprintf("%d-%d", id, k)
		prio := 0
		if prios > 1 {
			prio = rand.N(prios)
		}
		q.checker.Putting(item, prio, at)
		err := p.Put(ctx, itemData(item, size), prio)
		done := q.now()
		unknown := err != nil && (ctx.Err() != nil || errors.Is(err, backends.ErrUnknownOutcome))
		q.checker.Put(item, done, err == nil, unknown)
		switch {
		case err == nil:
			q.mu.Lock()
			results.Record(q.put, done-at)
			q.mu.Unlock()
		case unknown:
			if ctx.Err() != nil {
				return
			}
			q.count("put_unknown_outcome", err)
		default:
			q.count("put_"+errorKind(err), err)
			if isQueueLost(err) {
				return
			}
		}
	}
}

// consume takes, holds and acknowledges items until runCtx ends or the
// session is lost. An item taken is acknowledged on a fresh bounded
// context even if runCtx ends while it is held.
func (q *queueRun) consume(runCtx, ctx context.Context, id int, cn recipes.Consumer, s backends.Session, live *measure.Live) {
	defer func() {
		q.mu.Lock()
		q.lost[id] = sessionEnded(s) && runCtx.Err() == nil
		q.mu.Unlock()
	}()
	for {
		begin := q.now()
		t, err := cn.Take(runCtx)
		if err != nil && t.Uncertain {
			// The take's delete may have landed: given up (at most once).
			q.checker.TakenUncertain(itemID(t.Data), id, begin, q.now())
			q.count("take_uncertain", err)
			if sessionEnded(s) || !sleepCtx(runCtx, 10*time.Millisecond) {
				return
			}
			continue
		}
		if err != nil {
			// A consumer stops only with the case or its session; any
			// other failure is counted and it takes again.
			if runCtx.Err() != nil || sessionEnded(s) {
				if runCtx.Err() == nil {
					q.count("take_session_lost", err)
				}
				return
			}
			q.count("take_"+errorKind(err), err)
			if !sleepCtx(runCtx, 10*time.Millisecond) {
				return
			}
			continue
		}
		end := q.now()
		k := q.checker.Taken(itemID(t.Data), id, begin, end)
		q.mu.Lock()
		results.Record(q.take, end-begin)
		q.lastTake[id] = end
		q.wakeups += int64(t.Wakeups)
		q.failed += int64(t.FailedClaims)
		q.takes++
		q.mu.Unlock()
		if k == 0 {
			live.Op()
			select {
			case q.taken <- struct{}{}:
			default:
			}
		}
		sleepCtx(runCtx, q.hold)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		acked := q.now()
		err = cn.Ack(actx)
		cancel()
		if err == nil {
			q.mu.Lock()
			results.Record(q.ack, q.now()-acked)
			q.mu.Unlock()
		}
		lost := err != nil && sessionEnded(s)
		q.checker.Acked(itemID(t.Data), k, err == nil, lost)
		switch {
		case lost:
			return // the session is gone: this consumer is done
		case err != nil:
			// A failed Ack (no quorum, a lost reply) leaves the item to
			// the variant's delivery; the consumer goes on taking.
			q.count("ack_"+errorKind(err), err)
			if !sleepCtx(runCtx, 10*time.Millisecond) {
				return
			}
		}
	}
}

// drainQueue lists the items still queued at the end for the checker and
// removes them (the native queue's items have no lease).
func (q *queueRun) drainQueue(ctx context.Context, s backends.Session, path string, persistent bool) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	items := path + "/" + recipes.QueueItemsDir
	kids, err := s.Children(dctx, items)
	if err != nil && !errors.Is(err, backends.ErrNoNode) {
		// Without the listing an item never taken may be queued or lost:
		// the checker counts it unaccounted, and the case has an error.
		q.checker.Unlisted()
		q.count("drain_"+errorKind(err), fmt.Errorf("the items still queued at the end could not be listed, so the untaken ones are unaccounted for, not checked: %w", err))
		return
	}
	// Read the items drainReaders at a time: a backlog of thousands, read
	// one by one on a loaded machine, would outlast the bound.
	var g errgroup.Group
	g.SetLimit(drainReaders)
	for _, k := range kids {
		g.Go(func() error {
			data, _, err := s.Get(dctx, k.Path)
			if err == nil {
				q.checker.Queued(itemID(data))
			}
			if persistent {
				_ = s.Delete(dctx, k.Path)
			}
			if errors.Is(err, backends.ErrNoNode) {
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		// An item listed but not read may be queued: as above.
		q.checker.Unlisted()
		q.count("drain_"+errorKind(err), fmt.Errorf("items still queued at the end could not be read, so the untaken ones are unaccounted for, not checked: %w", err))
	}
}

// drainReaders is how many reads of the items left at the end are in
// flight at once.
const drainReaders = 16

func (q *queueRun) count(kind string, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.d.count(kind, err)
}

// itemData is item padded with '.' to size bytes (never cut).
func itemData(item string, size int) []byte {
	if len(item) >= size {
		return []byte(item)
	}
	return []byte(item + " " + strings.Repeat(".", size-len(item)-1))
}

// itemID reads the item's name back from its data.
func itemID(data []byte) string {
	s := string(data)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}

// collect turns the checker, the recorders and the snapshots into the
// case's result.
func (qc *queueCase) collect(dr *driver, o measure.Outcome) {
	q, v, prios := qc.q, qc.v, qc.prios
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // one bound for all
	for i, cn := range qc.cons {
		if st, ok := cn.(recipes.Strander); ok {
			if data, ok := st.Stranded(sctx); ok {
				q.checker.Stranded(itemID(data), i, q.now())
			}
		}
	}
	cancel()
	res := &dr.res
	chk := q.checker.Result()
	taken := int64(len(chk.TakenAt))
	res.Ops = results.Ops{Issued: taken + chk.LostUntaken + chk.QueuedUntaken + chk.UnaccountedUntaken, Succeeded: taken,
		Failed: chk.LostUntaken, Unknown: chk.UnaccountedUntaken, StillWaiting: chk.QueuedUntaken}
	res.Safety = chk.Safety
	delivery := results.NewRecorder()
	for _, d := range chk.Delivery {
		results.Record(delivery, d)
	}
	addHistogram(res, figures.LatencyDelivery, delivery)
	addHistogram(res, figures.LatencyPut, q.put)
	addHistogram(res, figures.LatencyTake, q.take)
	addHistogram(res, figures.LatencyAck, q.ack)
	res.Series = dr.seriesAt(o, chk.TakenAt)
	// The herd-free best case: one notification an item.
	dr.fill(o, taken, v.ClientCounts, taken)
	if taken > 0 {
		if v.ClientCounts { // native's library counts none: absent, not 0
			res.PerOp[figures.FailedClaims.Key] = float64(q.failed) / float64(taken)
		}
		res.PerOp[figures.PriorityInversions.Key] = float64(chk.Inversions) / float64(taken)
		res.PerOp[figures.Redeliveries.Key] = float64(chk.Redelivered) / float64(taken)
	}
	if v.ClientCounts {
		res.Notes = append(res.Notes, fmt.Sprintf("queue: %.2f notifications and %.2f failed claims per item taken (client)",
			res.PerOp[figures.WatchEvents.Key], res.PerOp[figures.FailedClaims.Key]))
	}
	unknown := ""
	if chk.PutUnknown > 0 {
		unknown = fmt.Sprintf(" (and %d taken whose put's answer never came: cut off by the case's end or lost)", chk.PutUnknown)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("queue (%s): %d put%s, %d taken, %d delivered, %d still queued, %d lost, %d duplicates",
		v.New.Delivery, chk.Put, unknown, taken, chk.Delivered, chk.StillQueued, chk.Lost, chk.Duplicates))
	if chk.Unaccounted > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("queue: %d items unaccounted for: neither taken nor acknowledged, and the "+
			"queue could not be listed at the end to say whether they wait there or were lost (not counted as violations)",
			chk.Unaccounted))
	}
	if chk.LostHolding > 0 || chk.Redelivered > 0 || chk.Dropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("queue: %d takes by consumers lost before Ack: %d items redelivered, %d dropped with their consumer, %d taken again after a take whose write had not landed",
			chk.LostHolding, chk.Redelivered, chk.Dropped, chk.Retaken))
	}
	if prios > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("queue: %d priority inversions in %d takes (%d priorities); %d counting takes that raced a more urgent item's (an upper bound)",
			chk.Inversions, taken, prios, chk.RacedInversions))
	}
	if chk.QueuedUntaken > 0 {
		// Items waited at the end: a consumer that took none in the case's
		// last second was stuck in a Take (or lost), not idle.
		var stuck []int
		for i, at := range q.lastTake {
			if at < o.End-time.Second && !q.lost[i] {
				stuck = append(stuck, i)
			}
		}
		if len(stuck) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("queue: %d of %d consumers took no item in the case's last second while %d items waited (first: consumer %d)",
				len(stuck), len(q.lastTake), chk.QueuedUntaken, stuck[0]))
		}
	}
	if chk.Stranded > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("queue: %d items taken by the library's uncancellable Dequeue after its consumer stopped", chk.Stranded))
	}
}

func isQueueLost(err error) bool {
	return errors.Is(err, backends.ErrSessionLost) || errors.Is(err, recipes.ErrQueueLost)
}
