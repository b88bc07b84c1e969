package safety

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zkbench/zkbench/results"
)

// SemaphoreChecker checks a counting semaphore of K permits: never more
// than K clients hold it at once. It checks twice. Online, Enter counts the
// clients inside at each grant, and a grant that makes more than K is a
// violation. From the history, every section (grant to release) is kept,
// and Crowded sweeps them afterwards for any instant at which more than K
// were inside: the check that needs no trust in the bookkeeping of the
// online count. Enter is called after Acquire returned and Exit before
// Release is sent, so a recorded section lies within the true one: the
// history never shows a crowd that was not there.
//
// Safe for concurrent use; Enter and Exit take one short lock.
type SemaphoreChecker struct {
	permits int

	mu         sync.Mutex
	inside     map[int]Section // client -> open section
	history    []Section       // closed sections, in Exit order
	entered    int64
	violations int64
	unbalanced int64
	holdersSum int64
	maxHolders int
	details    findings
}

// NewSemaphoreChecker returns a checker of a semaphore with permits permits,
// with nobody inside.
func NewSemaphoreChecker(permits int) *SemaphoreChecker {
	return &SemaphoreChecker{permits: permits, details: findings{max: DefaultMaxDetails}, inside: map[int]Section{}}
}

// Enter records that client was granted a permit with token (0 if none) at
// offset at, and returns how many clients hold one now, itself included.
func (c *SemaphoreChecker) Enter(client int, token int64, at time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entered++
	if open, ok := c.inside[client]; ok {
		c.unbalanced++
		open.End = at
		c.history = append(c.history, open)
	}
	c.inside[client] = Section{Client: client, Token: token, Start: at, End: -1}
	n := len(c.inside)
	c.holdersSum += int64(n)
	c.maxHolders = max(c.maxHolders, n)
	if n > c.permits {
		c.violations++
		c.details.add("at %v client %d was granted a permit while %d clients held the semaphore's %d permits: %v",
			at.Round(time.Microsecond), client, n-1, c.permits, c.holdersLocked(client))
	}
	return n
}

// holdersLocked lists the clients inside other than except, sorted.
func (c *SemaphoreChecker) holdersLocked(except int) []int {
	out := make([]int, 0, len(c.inside))
	for id := range c.inside {
		if id != except {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Exit records that client let go at offset at; it reports whether client
// held a permit.
func (c *SemaphoreChecker) Exit(client int, at time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	open, ok := c.inside[client]
	if !ok {
		c.unbalanced++
		return false
	}
	delete(c.inside, client)
	open.End = at
	c.history = append(c.history, open)
	return true
}

// History returns every section so far: the closed ones, then the open
// ones (End -1).
func (c *SemaphoreChecker) History() []Section {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.history)
	for _, s := range c.inside {
		out = append(out, s)
	}
	return out
}

// SemaphoreReport is what a SemaphoreChecker found.
type SemaphoreReport struct {
	Permits int   `json:"permits"`
	Entered int64 `json:"entered"`
	// Violations counts grants that made more than Permits holders, as
	// the online count saw them.
	Violations int64 `json:"violations"`
	Unbalanced int64 `json:"unbalanced"`
	// MeanHolders is the mean, over grants, of the clients holding at the
	// grant (itself included); MaxHolders the most.
	MeanHolders float64 `json:"mean_holders"`
	MaxHolders  int     `json:"max_holders"`
	// MostAtOnce is the most sections of the history open at one instant,
	// Crowded counts the grants after which more than Permits were, and
	// Crowds are the first few of them.
	MostAtOnce int      `json:"most_at_once"`
	Crowded    int64    `json:"crowded"`
	Crowds     []Crowd  `json:"crowds,omitempty"`
	Details    []string `json:"details,omitempty"`
}

// Report returns the findings so far, the history swept once.
func (c *SemaphoreChecker) Report() SemaphoreReport {
	hist := c.History()
	c.mu.Lock()
	r := SemaphoreReport{Permits: c.permits, Entered: c.entered, Violations: c.violations, Unbalanced: c.unbalanced,
		MaxHolders: c.maxHolders, Details: slices.Clone(c.details.list)}
	if c.entered > 0 {
		r.MeanHolders = float64(c.holdersSum) / float64(c.entered)
	}
	c.mu.Unlock()
	r.MostAtOnce, r.Crowded, r.Crowds = Crowded(hist, c.permits, c.details.max)
	return r
}

// Safety returns the findings as a results.Safety: the online count's
// violations, or the history's crowds if it found more.
func (c *SemaphoreChecker) Safety() results.Safety {
	r := c.Report()
	s := results.Safety{Checked: r.Entered, Violations: max(r.Violations, r.Crowded), Details: r.Details}
	if r.Violations == 0 {
		for _, cr := range r.Crowds {
			s.Details = append(s.Details, cr.String())
		}
	}
	return s
}

// Crowd is an instant at which more clients held than there are permits.
type Crowd struct {
	// At is the grant that made the crowd.
	At time.Duration `json:"at_ns"`
	// Holders are the sections open at At, the granted one last.
	Holders []Section `json:"holders"`
}

func (cr Crowd) String() string {
	ids := make([]int, len(cr.Holders))
	for i, s := range cr.Holders {
		ids[i] = s.Client
	}
	return fmt.Sprintf("at %v clients %v held at once", cr.At.Round(time.Microsecond), ids)
}

// Crowded sweeps recorded sections offline and returns the most open at
// one instant, how many grants made more than permits open, and the first
// keep of those. A section with End < Start is open at the end. A section
// that ends exactly when another starts does not overlap it.
func Crowded(sections []Section, permits, keep int) (most int, n int64, crowds []Crowd) {
	sweep(sections, func(cur Section, open []Section) {
		most = max(most, len(open)+1)
		if len(open)+1 <= permits {
			return
		}
		n++
		if len(crowds) < keep {
			crowds = append(crowds, Crowd{At: cur.Start, Holders: append(slices.Clone(open), cur)})
		}
	})
	return most, n, crowds
}
