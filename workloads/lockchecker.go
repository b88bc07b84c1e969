package workloads

import (
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
)

// maxViolationDetails bounds the overlaps a result describes one by one.
const maxViolationDetails = 10

// LockChecker watches every client of one lock from inside the process, on
// the clock all clients share, and measures what no single client can see:
//
//   - mutual exclusion, delegated to a safety.Checker: a grant while another
//     client is inside is a violation, recorded with both clients and
//     fencing tokens, and a token that does not grow is one too. Holders
//     are tracked per client, so a holder that lost its lock without
//     leaving is still inside when the next grant overlaps it;
//   - FIFO inversions: for each grant to a client that asked in the
//     measured window, the clients that asked earlier and are still
//     waiting (a Fenwick tree over ask tickets: O(log n)). Grants to asks
//     made before the window are left out: at the start every client asks
//     at once, in an order no server keeps, and that burst (up to n(n-1)/2
//     inversions) would swamp the steady state. Without a warm-up the burst
//     is in the window and counts;
//   - handoff gap: from a holder's release to the next grant, when the
//     grantee was already waiting at that release, and its critical path
//     (HandoffPath): the release call, the release to the grantee's last
//     watch event, that event to the grant.
//
// It is safe for concurrent use; each call takes one short lock (two for
// Grant and Release: this checker's and the safety checker's).
type LockChecker struct {
	excl *safety.Checker

	mu         sync.Mutex
	nextTicket int
	waiting    fenwick

	lastRelease    time.Duration
	releasePending bool
	releaseTicket  int // tickets below it were asked before the last release
	handoff        *hdrhistogram.Histogram
	path           HandoffPath

	checked, inversions int64
	// windowTicket is the first ticket asked in the measured window.
	windowTicket int
}

// NewLockChecker returns a checker with no client waiting or holding.
func NewLockChecker() *LockChecker {
	return &LockChecker{
		excl:    safety.NewChecker(safety.WithNoun("lock"), safety.WithMaxDetails(maxViolationDetails)),
		handoff: results.NewRecorder(),
		path:    HandoffPath{Release: results.NewRecorder(), Notify: results.NewRecorder(), Decide: results.NewRecorder()},
	}
}

// HandoffPath is where a handoff's time goes, on the clock every client
// shares: Release, the holder's release call (its commit and reply); Notify,
// from the release's start to the grantee's last watch event before its
// grant (a commit plus a notification, what the calibration's notify
// latency measures); Decide, from that event to the grant (the grantee's
// own work after the event, with any requests it made). Notify + Decide is
// the handoff gap of the same handoff. Handoffs whose grantee had no watch
// event after the release (it was not instrumented, or it learned without
// one) are in Unnotified, not in Notify and Decide.
type HandoffPath struct {
	Release, Notify, Decide *hdrhistogram.Histogram
	Unnotified              int64
}

// Ask records that a client asked for the lock; pass the ticket to Grant or
// Withdraw.
func (c *LockChecker) Ask() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.nextTicket
	c.nextTicket++
	c.waiting.add(t, 1)
	return t
}

// OpenWindow marks the start of the measured window: grants to asks made
// from now on have their FIFO inversions counted.
func (c *LockChecker) OpenWindow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.windowTicket = c.nextTicket
}

// Withdraw records that the asker of ticket stopped waiting without a grant.
func (c *LockChecker) Withdraw(ticket int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting.add(ticket, -1)
}

// Grant records that client, holding ticket, was granted the lock with
// fencing token (0: none) at offset at, its last watch event having come at
// notified (not positive: none known). measured says whether the grant
// falls in the measured interval: only then is it counted as checked and
// are its FIFO inversions and handoff gap recorded. Mutual exclusion is
// checked for every grant.
func (c *LockChecker) Grant(client, ticket int, token int64, at, notified time.Duration, measured bool) {
	c.excl.Enter(client, token, at)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting.add(ticket, -1)
	if measured {
		c.checked++
		if ticket >= c.windowTicket {
			c.inversions += int64(c.waiting.prefix(ticket - 1))
		}
		if c.releasePending && c.askedBefore(ticket) {
			results.Record(c.handoff, at-c.lastRelease)
			if notified > c.lastRelease && notified <= at {
				results.Record(c.path.Notify, notified-c.lastRelease)
				results.Record(c.path.Decide, at-notified)
			} else {
				c.path.Unnotified++
			}
		}
	}
	c.releasePending = false
}

// askedBefore reports whether ticket was issued before the last release:
// the grantee was already waiting when the lock was let go.
func (c *LockChecker) askedBefore(ticket int) bool {
	return ticket < c.releaseTicket
}

// Release records that client left its critical section at offset at, just
// before its release request. Call it before Release so that the next grant
// never looks like an overlap.
func (c *LockChecker) Release(client int, at time.Duration) {
	c.excl.Exit(client, at)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastRelease = at
	c.releasePending = true
	c.releaseTicket = c.nextTicket
}

// addHandoffPath adds the handoff's critical path to res: the release
// calls, and where some handoff's grantee had a watch event after the
// release, its notification and decision; a note counts the handoffs that
// had none.
func addHandoffPath(res *results.Result, p HandoffPath) {
	addHistogram(res, figures.LatencyReleaseCall, p.Release)
	if p.Notify.TotalCount() == 0 {
		return
	}
	addHistogram(res, figures.LatencyHandoffNotify, p.Notify)
	addHistogram(res, figures.LatencyHandoffDecide, p.Decide)
	if p.Unnotified > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("handoff path: %d of %d handoffs had no watch event at the grantee after the release (not in handoff_notify and handoff_decide)",
			p.Unnotified, p.Unnotified+p.Notify.TotalCount()))
	}
}

// Released records a measured release call of d (the holder's Release).
func (c *LockChecker) Released(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	results.Record(c.path.Release, d)
}

// CheckerResult is what a LockChecker found.
type CheckerResult struct {
	// Safety: Checked counts measured grants; Violations every grant, in
	// the window or not, made while another client was inside, and every
	// token that did not grow; Details describe the first of them.
	Safety results.Safety
	// Exclusion is the safety checker's full report (overlapping sections,
	// token regressions, unbalanced calls).
	Exclusion      safety.Report
	FIFOInversions int64
	Handoff        *hdrhistogram.Histogram
	Path           HandoffPath
}

// Result returns the findings so far.
func (c *LockChecker) Result() CheckerResult {
	excl := c.excl.Report()
	c.mu.Lock()
	defer c.mu.Unlock()
	h := results.NewRecorder()
	h.Merge(c.handoff)
	path := HandoffPath{Release: results.NewRecorder(), Notify: results.NewRecorder(), Decide: results.NewRecorder(),
		Unnotified: c.path.Unnotified}
	path.Release.Merge(c.path.Release)
	path.Notify.Merge(c.path.Notify)
	path.Decide.Merge(c.path.Decide)
	return CheckerResult{
		Safety: results.Safety{
			Checked:    c.checked,
			Violations: excl.Violations + excl.TokenRegressions,
			Details:    excl.Details,
		},
		Exclusion:      excl,
		FIFOInversions: c.inversions,
		Handoff:        h,
		Path:           path,
	}
}

// fenwick is a growable binary indexed tree of counts over ticket numbers.
type fenwick struct {
	tree []int32 // 1-based
	vals []int32 // point values, to rebuild on growth
}

func (f *fenwick) add(i, d int) {
	if i >= len(f.vals) {
		f.grow(i + 1)
	}
	f.vals[i] += int32(d)
	for j := i + 1; j < len(f.tree); j += j & -j {
		f.tree[j] += int32(d)
	}
}

// prefix is the sum of values at 0..i.
func (f *fenwick) prefix(i int) int {
	if i >= len(f.vals) {
		i = len(f.vals) - 1
	}
	s := 0
	for j := i + 1; j > 0; j -= j & -j {
		s += int(f.tree[j])
	}
	return s
}

func (f *fenwick) grow(n int) {
	size := max(1024, len(f.vals))
	for size < n {
		size *= 2
	}
	vals := make([]int32, size)
	copy(vals, f.vals)
	tree := make([]int32, size+1)
	for i, v := range vals {
		j := i + 1
		tree[j] += v
		if p := j + j&-j; p <= size {
			tree[p] += tree[j]
		}
	}
	f.vals, f.tree = vals, tree
}
