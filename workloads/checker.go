package workloads

import (
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/results"
)

// maxViolationDetails bounds the overlaps a result describes one by one.
const maxViolationDetails = 10

// LockChecker watches every client of one lock from inside the process, on
// the clock all clients share, and measures what no single client can see:
//
//   - mutual exclusion: a holder count that must be 0 when a grant arrives;
//     every overlap is a violation, recorded with both fencing tokens;
//   - FIFO inversions: for each grant to a client that asked in the
//     measured window, the clients that asked earlier and are still
//     waiting (a Fenwick tree over ask tickets: O(log n)). Grants to asks
//     made before the window are left out: at the start every client asks
//     at once, in an order no server keeps, and that burst (up to n(n-1)/2
//     inversions) would swamp the steady state. Without a warm-up the burst
//     is in the window and counts;
//   - handoff gap: from a holder's release to the next grant, when the
//     grantee was already waiting at that release.
//
// It is safe for concurrent use; each call takes one short lock.
type LockChecker struct {
	mu         sync.Mutex
	nextTicket int
	waiting    fenwick

	holders     int
	holder      int
	holderToken int64

	lastRelease    time.Duration
	releasePending bool
	releaseTicket  int // tickets below it were asked before the last release
	handoff        *hdrhistogram.Histogram

	checked, violations, inversions int64
	details                         []string
	// windowTicket is the first ticket asked in the measured window.
	windowTicket int
}

// NewLockChecker returns a checker with no client waiting or holding.
func NewLockChecker() *LockChecker {
	return &LockChecker{handoff: results.NewRecorder()}
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
// fencing token at offset at. measured says whether the grant falls in the
// measured interval: only then are its FIFO inversions and handoff gap
// recorded. Mutual exclusion is checked for every grant.
func (c *LockChecker) Grant(client, ticket int, token int64, at time.Duration, measured bool) {
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
		}
	}
	c.releasePending = false
	if c.holders > 0 {
		c.violations++
		if len(c.details) < maxViolationDetails {
			c.details = append(c.details, fmt.Sprintf("at %v client %d was granted token %d while client %d held token %d",
				at.Round(time.Microsecond), client, token, c.holder, c.holderToken))
		}
	}
	c.holders++
	c.holder, c.holderToken = client, token
}

// askedBefore reports whether ticket was issued before the last release:
// the grantee was already waiting when the lock was let go.
func (c *LockChecker) askedBefore(ticket int) bool {
	return ticket < c.releaseTicket
}

// Release records that the holder left its critical section at offset at,
// just before its release request. Call it before Release so that the next
// grant never looks like an overlap.
func (c *LockChecker) Release(at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holders > 0 {
		c.holders--
	}
	c.lastRelease = at
	c.releasePending = true
	c.releaseTicket = c.nextTicket
}

// CheckerResult is what a LockChecker found.
type CheckerResult struct {
	Safety         results.Safety
	FIFOInversions int64
	Handoff        *hdrhistogram.Histogram
}

// Result returns the findings so far.
func (c *LockChecker) Result() CheckerResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := results.NewRecorder()
	h.Merge(c.handoff)
	return CheckerResult{
		Safety: results.Safety{
			Checked:    c.checked,
			Violations: c.violations,
			Details:    append([]string(nil), c.details...),
		},
		FIFOInversions: c.inversions,
		Handoff:        h,
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
