package workloads

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/results"
)

// QueueChecker keeps every item's put and takes on the clock all clients
// share, and checks a queue's delivery:
//
//   - every item put is taken exactly once, or is still queued at the end
//     (reported, not lost);
//   - an item whose consumer was lost between Take and Ack is gone for
//     good under at-most-once (counted as dropped, allowed) and taken again
//     (or still queued) under at-least-once (counted as redelivered);
//   - anything else is a violation: an item lost (never taken, not queued),
//     taken twice without a lost consumer between (or at all, at most
//     once), or taken without ever being put;
//   - priority inversions: an item taken while a more urgent one waited,
//     that is, one put before this take began and not yet being taken when
//     it ended (a lower bound: takes running at once are not counted).
//
// It is safe for concurrent use; each call takes one short lock.
type QueueChecker struct {
	mu       sync.Mutex
	delivery recipes.Delivery
	items    map[string]*queueItem
	maybe    map[string]bool // puts of unknown outcome, or not yet answered
	pending  map[string]*queueItem
	unknown  []string        // taken, never put
	queued   map[string]bool // still queued at the end
	unlisted bool            // the listing at the end failed: see Unlisted
}

// queueItem is one item's history.
type queueItem struct {
	priority       int
	intended, done time.Duration // put scheduled and answered
	takes          []queueTake
}

// queueTake is one Take that returned the item.
type queueTake struct {
	consumer   int
	begin, end time.Duration
	acked      bool
	lost       bool // the consumer was lost before Ack
	uncertain  bool // lost while its take's write was in flight
	stranded   bool // taken by a library call after its consumer stopped
}

// NewQueueChecker returns a checker for a queue that promises delivery.
func NewQueueChecker(delivery recipes.Delivery) *QueueChecker {
	return &QueueChecker{delivery: delivery, items: map[string]*queueItem{}, maybe: map[string]bool{}, pending: map[string]*queueItem{}, queued: map[string]bool{}}
}

// Putting records an item about to be put with priority, scheduled at
// intended, before the put is sent (a consumer may take it before the
// put's answer arrives). Until Put says otherwise its outcome is unknown.
func (c *QueueChecker) Putting(id string, priority int, intended time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maybe[id] = true
	c.pending[id] = &queueItem{priority: priority, intended: intended, done: -1}
}

// Put records the answer to id's put at done: ok (the item is in the
// queue), or failed for sure (!ok and !unknown: it is not); an unknown
// outcome leaves it maybe put.
func (c *QueueChecker) Put(id string, done time.Duration, ok, unknown bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[id]
	delete(c.pending, id)
	if p == nil || unknown {
		return
	}
	delete(c.maybe, id)
	if !ok {
		return
	}
	if it := c.items[id]; it != nil { // taken before the answer came
		it.priority, it.intended, it.done = p.priority, p.intended, done
		return
	}
	p.done = done
	c.items[id] = p
}

// Taken records that consumer's Take, begun at begin, returned id at end;
// it returns a handle for Acked.
func (c *QueueChecker) Taken(id string, consumer int, begin, end time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.items[id]
	if it == nil {
		if !c.maybe[id] {
			c.unknown = append(c.unknown, id)
			return -1
		}
		it = &queueItem{intended: -1, done: -1}
		c.items[id] = it
	}
	it.takes = append(it.takes, queueTake{consumer: consumer, begin: begin, end: end})
	return len(it.takes) - 1
}

// Acked records how take k of id ended: acknowledged, or not because the
// consumer was lost (lost) or for another reason.
func (c *QueueChecker) Acked(id string, k int, acked, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if it := c.items[id]; it != nil && k >= 0 && k < len(it.takes) {
		it.takes[k].acked, it.takes[k].lost = acked, lost
	}
}

// TakenUncertain records that consumer's Take was returning id when the
// session was lost with the take's write in flight (recipes.Taken.Uncertain):
// the item may be gone with the consumer or still queued.
func (c *QueueChecker) TakenUncertain(id string, consumer int, begin, end time.Duration) {
	k := c.Taken(id, consumer, begin, end)
	c.mu.Lock()
	defer c.mu.Unlock()
	if it := c.items[id]; it != nil && k >= 0 {
		it.takes[k].lost, it.takes[k].uncertain = true, true
	}
}

// Stranded records an item a consumer's uncancellable library call took
// after the consumer stopped (recipes.Strander): gone with it.
func (c *QueueChecker) Stranded(id string, consumer int, at time.Duration) {
	k := c.Taken(id, consumer, at, at)
	c.mu.Lock()
	defer c.mu.Unlock()
	if it := c.items[id]; it != nil && k >= 0 {
		it.takes[k].stranded, it.takes[k].lost = true, true
	}
}

// Queued records an item still in the queue at the end of the case.
func (c *QueueChecker) Queued(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queued[id] = true
}

// Unlisted records that the queue could not be listed at the end of the
// case: an item neither taken nor acknowledged may still be queued, so it
// is unaccounted for, not lost.
func (c *QueueChecker) Unlisted() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unlisted = true
}

// QueueCheckerResult is what a QueueChecker found.
type QueueCheckerResult struct {
	Safety results.Safety
	// Put: items put for sure; PutUnknown: items taken whose put's outcome
	// stayed unknown (its answer cut off by the case's end, or lost);
	// Delivered: items taken and acknowledged once; StillQueued: items in
	// the queue at the end.
	Put, PutUnknown, Delivered, StillQueued int64
	// Dropped: items gone with a lost consumer (at most once); Redelivered:
	// takes after a lost consumer's (at least once); Stranded: items a
	// library call took after its consumer stopped.
	Dropped, Redelivered, Stranded int64
	// LostHolding: takes whose consumer was lost before Ack (or while
	// taking: Uncertain ones too); Retaken: takes of an item after an
	// uncertain take of it (whose write had not landed).
	LostHolding, Retaken int64
	// Lost: items put and then gone undelivered (LostUntaken of them were
	// never taken at all); Duplicates: takes beyond what the delivery
	// allows.
	Lost, LostUntaken, Duplicates int64
	// QueuedUntaken: items never taken and still queued at the end.
	QueuedUntaken int64
	// Unaccounted: items that would be lost but for the queue's listing
	// at the end, which failed (Unlisted): they may still be queued
	// (UnaccountedUntaken of them were never taken).
	Unaccounted, UnaccountedUntaken int64
	// Inversions: takes of an item while a more urgent one waited (put
	// before this take began, no take of it begun before this one ended:
	// a lower bound). RacedInversions also counts those whose more urgent
	// item was being taken at the same time (its take ended later): an
	// upper bound, since that take may have removed it first.
	Inversions, RacedInversions int64
	// TakenAt are the ends of the first takes, for the series.
	TakenAt []time.Duration
	// Delivery are the first takes' ends minus the puts' scheduled times.
	Delivery []time.Duration
}

// Result checks every item.
func (c *QueueChecker) Result() QueueCheckerResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out QueueCheckerResult
	violate := func(format string, args ...any) {
		out.Safety.Violations++
		if len(out.Safety.Details) < maxViolationDetails {
			out.Safety.Details = append(out.Safety.Details, fmt.Sprintf(format, args...))
		}
	}
	for _, id := range c.unknown {
		out.Safety.Checked++
		violate("item %s taken but never put", id)
	}
	ids := make([]string, 0, len(c.items))
	for id := range c.items {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		it := c.items[id]
		certain := it.done >= 0
		if certain {
			out.Put++
		} else if len(it.takes) > 0 {
			out.PutUnknown++
		}
		out.Safety.Checked++
		if len(it.takes) > 0 {
			first := it.takes[0]
			out.TakenAt = append(out.TakenAt, first.end)
			if certain {
				out.Delivery = append(out.Delivery, first.end-it.intended)
			}
		}
		last := 0 // the take that decides how the item ended
		for k, t := range it.takes {
			if t.stranded {
				out.Stranded++
			}
			if t.lost && !t.acked && !t.stranded {
				out.LostHolding++
			}
			if k == 0 {
				continue
			}
			prev := it.takes[last]
			if !t.uncertain || prev.uncertain {
				last = k
			}
			if prev.uncertain {
				out.Retaken++
				continue
			}
			if t.uncertain {
				// A take that gave the item up after another consumer's
				// take of it (ended earlier): its write did not remove the
				// item, since the other's succeeded, and it delivered
				// nothing. Seen when a leader kill cut a delete off.
				continue
			}
			if c.delivery == recipes.AtLeastOnce && prev.lost && !prev.acked {
				out.Redelivered++
				continue
			}
			out.Duplicates++
			violate("item %s taken again by consumer %d at %v after consumer %d took it at %v (%s, acked %v, lost %v)",
				id, t.consumer, t.end.Round(time.Microsecond), prev.consumer, prev.end.Round(time.Microsecond), c.delivery, prev.acked, prev.lost)
		}
		switch {
		case len(it.takes) == 0 && c.queued[id]:
			out.StillQueued++
			out.QueuedUntaken++
		case len(it.takes) == 0 && certain && c.unlisted:
			out.Unaccounted++
			out.UnaccountedUntaken++
		case len(it.takes) == 0 && certain:
			out.Lost++
			out.LostUntaken++
			violate("item %s put at %v was never taken and is not in the queue", id, it.done.Round(time.Microsecond))
		case len(it.takes) == 0:
		default:
			last := it.takes[last]
			switch {
			case last.acked:
				out.Delivered++
			case c.delivery == recipes.AtMostOnce && last.lost:
				out.Dropped++
			case c.queued[id]:
				out.StillQueued++ // claimed by a lost consumer, waiting for redelivery
			case last.lost && c.unlisted:
				out.Unaccounted++
			case last.lost:
				out.Lost++
				violate("item %s: consumer %d was lost holding it (%s) and it was not taken again nor left in the queue", id, last.consumer, c.delivery)
			default:
				out.Delivered++ // taken, its Ack failed otherwise: counted by the workload's errors
			}
		}
	}
	out.Inversions, out.RacedInversions = c.inversions(false), c.inversions(true)
	slices.Sort(out.TakenAt)
	return out
}

// inversions counts first takes of an item i for which some item j of a
// more urgent priority had been put before i's take began and had no take
// begun (raced: ended) before i's take ended.
func (c *QueueChecker) inversions(raced bool) int64 {
	type rec struct {
		prio            int
		put, begin, end time.Duration
		mark            time.Duration // begin, or end when raced
		taken           bool
	}
	var recs []rec
	levels := 0
	for _, it := range c.items {
		if it.done < 0 {
			continue
		}
		r := rec{prio: it.priority, put: it.done, begin: 1<<62 - 1}
		if len(it.takes) > 0 {
			r.begin, r.end, r.taken = it.takes[0].begin, it.takes[0].end, true
		}
		r.mark = r.begin
		if raced && r.taken {
			r.mark = r.end
		}
		recs = append(recs, r)
		levels = max(levels, it.priority+1)
	}
	if levels < 2 {
		return 0
	}
	// Per priority, items by put time with the latest take start among
	// those put so far (a prefix maximum).
	type level struct {
		put, latest []time.Duration
	}
	byLevel := make([]level, levels)
	slices.SortFunc(recs, func(a, b rec) int { return int(a.put - b.put) })
	for _, r := range recs {
		l := &byLevel[r.prio]
		latest := r.mark
		if n := len(l.latest); n > 0 {
			latest = max(latest, l.latest[n-1])
		}
		l.put, l.latest = append(l.put, r.put), append(l.latest, latest)
	}
	var n int64
	for _, r := range recs {
		if !r.taken {
			continue
		}
		for p := 0; p < r.prio; p++ {
			l := byLevel[p]
			k, _ := slices.BinarySearch(l.put, r.begin) // items of p put before r's take began
			if k > 0 && l.latest[k-1] > r.end {
				n++
				break
			}
		}
	}
	return n
}
