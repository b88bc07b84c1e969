package workloads

import (
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/results"
)

// LeaderChecker watches every candidate of one election from inside the
// process, on the clock all clients share:
//
//   - safety: at most one candidate acts as leader at any time; a term that
//     begins while another is acting is a violation, recorded with both
//     tokens;
//   - handoff gap: from the end of one term to the beginning of the next;
//   - turns: terms per candidate (Jain's index) and turn violations, terms
//     given to a candidate that already had one among the last N-1 terms
//     while N candidates queue (0 for a strict round-robin).
//
// It is safe for concurrent use; each call takes one short lock.
type LeaderChecker struct {
	mu         sync.Mutex
	candidates int
	acting     map[int]int64 // candidate -> token
	lastEnd    time.Duration
	ended      bool
	handoff    *hdrhistogram.Histogram
	recent     []int // the last candidates-1 leaders
	terms      []int64

	checked, violations, turnViolations int64
	details                             []string
}

// NewLeaderChecker returns a checker for an election among n candidates.
func NewLeaderChecker(n int) *LeaderChecker {
	return &LeaderChecker{candidates: n, acting: map[int]int64{}, handoff: results.NewRecorder(), terms: make([]int64, n)}
}

// Begin records that candidate started acting as leader with token at
// offset at. measured says whether the term falls in the measured interval:
// only then are its handoff gap and turn recorded. Safety is checked always.
func (c *LeaderChecker) Begin(candidate int, token int64, at time.Duration, measured bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for other, otherToken := range c.acting {
		c.violations++
		if len(c.details) < maxViolationDetails {
			c.details = append(c.details, fmt.Sprintf("at %v candidate %d began leading (token %d) while candidate %d still acted (token %d)",
				at.Round(time.Microsecond), candidate, token, other, otherToken))
		}
	}
	c.acting[candidate] = token
	if measured {
		c.checked++
		if c.ended && len(c.acting) == 1 {
			results.Record(c.handoff, at-c.lastEnd)
		}
		for _, r := range c.recent {
			if r == candidate {
				c.turnViolations++
				break
			}
		}
		if candidate >= 0 && candidate < len(c.terms) {
			c.terms[candidate]++
		}
	}
	if c.candidates > 1 {
		c.recent = append(c.recent, candidate)
		if len(c.recent) > c.candidates-1 {
			c.recent = c.recent[1:]
		}
	}
	c.ended = false
}

// End records that candidate stopped acting at offset at. Ending a
// candidate that is not acting does nothing, so a crash recorded by the
// controller and the candidate's own notice of it may both call End.
func (c *LeaderChecker) End(candidate int, at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.acting[candidate]; !ok {
		return
	}
	delete(c.acting, candidate)
	if len(c.acting) == 0 {
		c.lastEnd, c.ended = at, true
	}
}

// LeaderCheckerResult is what a LeaderChecker found.
type LeaderCheckerResult struct {
	Safety         results.Safety
	Handoff        *hdrhistogram.Histogram
	TermsPerClient []int64
	TurnViolations int64
}

// Result returns the findings so far.
func (c *LeaderChecker) Result() LeaderCheckerResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := results.NewRecorder()
	h.Merge(c.handoff)
	return LeaderCheckerResult{
		Safety: results.Safety{
			Checked:    c.checked,
			Violations: c.violations,
			Details:    append([]string(nil), c.details...),
		},
		Handoff:        h,
		TermsPerClient: append([]int64(nil), c.terms...),
		TurnViolations: c.turnViolations,
	}
}
