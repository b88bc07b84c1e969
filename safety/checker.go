package safety

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/zkbench/zkbench/results"
)

// Section is one client's stay in a critical section (or one leader's term):
// from Start to End, both offsets on one clock shared by every client, under
// fencing token Token (0 if unknown).
type Section struct {
	Client int           `json:"client"`
	Token  int64         `json:"token"`
	Start  time.Duration `json:"start_ns"`
	End    time.Duration `json:"end_ns"`
}

// Overlap is two clients inside at once: Second entered while First was in.
type Overlap struct {
	First, Second Section
	// At is when Second entered.
	At time.Duration
}

// Checker checks mutual exclusion online: at most one client inside at any
// time. Enter records a grant, Exit the end of the section; an Enter while
// another client is inside is a violation, recorded with both clients and
// fencing tokens. Holders are tracked per client, so a client that lost its
// lock and never said so is still counted inside until its Exit: exactly
// the holder that overlaps the next one.
//
// It also checks that fencing tokens grow with every grant: a grant whose
// token is not above every earlier grant's is counted as a token regression.
//
// Safe for concurrent use; Enter and Exit take one short lock and are O(number
// of clients inside), which is 1 when the recipe is safe.
type Checker struct {
	noun string

	mu         sync.Mutex
	inside     []Section // open sections, at most one per client
	maxToken   int64
	entered    int64
	violations int64
	regressed  int64
	unbalanced int64
	overlaps   []Overlap
	details    findings
}

// CheckerOption configures a Checker.
type CheckerOption func(*Checker)

// WithNoun names what is checked in details ("lock", "leadership"). Default
// "lock".
func WithNoun(s string) CheckerOption { return func(c *Checker) { c.noun = s } }

// WithMaxDetails bounds the overlaps kept and described one by one. Default
// DefaultMaxDetails.
func WithMaxDetails(n int) CheckerOption { return func(c *Checker) { c.details.max = n } }

// NewChecker returns a checker with nobody inside.
func NewChecker(opts ...CheckerOption) *Checker {
	c := &Checker{noun: "lock", details: findings{max: DefaultMaxDetails}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Enter records that client was granted with token at offset at. It returns
// how many other clients were inside then (0 when exclusion holds).
func (c *Checker) Enter(client int, token int64, at time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entered++
	if i := c.find(client); i >= 0 {
		// Entered again without an exit: close the old section here.
		c.unbalanced++
		c.closeLocked(i, at)
	}
	if token != 0 {
		if token <= c.maxToken {
			c.regressed++
			c.details.add("at %v client %d was granted the %s with token %d, not above an earlier grant's %d",
				at.Round(time.Microsecond), client, c.noun, token, c.maxToken)
		} else {
			c.maxToken = token
		}
	}
	s := Section{Client: client, Token: token, Start: at, End: -1}
	others := len(c.inside)
	if others > 0 {
		c.violations++
		for _, o := range c.inside {
			if len(c.overlaps) < c.details.max {
				c.overlaps = append(c.overlaps, Overlap{First: o, Second: s, At: at})
			}
			c.details.add("at %v client %d was granted the %s with token %d while client %d held it with token %d since %v",
				at.Round(time.Microsecond), client, c.noun, token, o.Client, o.Token, o.Start.Round(time.Microsecond))
		}
	}
	c.inside = append(c.inside, s)
	return others
}

// Exit records that client left at offset at. It reports whether client
// was inside.
func (c *Checker) Exit(client int, at time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.find(client)
	if i < 0 {
		c.unbalanced++
		return false
	}
	c.closeLocked(i, at)
	return true
}

// closeLocked ends open section i at at.
func (c *Checker) closeLocked(i int, at time.Duration) {
	s := c.inside[i]
	c.inside = slices.Delete(c.inside, i, i+1)
	for j := range c.overlaps {
		o := &c.overlaps[j]
		if o.First.Client == s.Client && o.First.Start == s.Start && o.First.End < 0 {
			o.First.End = at
		}
		if o.Second.Client == s.Client && o.Second.Start == s.Start && o.Second.End < 0 {
			o.Second.End = at
		}
	}
}

// Inside returns the clients inside now, in the order they entered.
func (c *Checker) Inside() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, len(c.inside))
	for i, s := range c.inside {
		out[i] = s.Client
	}
	return out
}

func (c *Checker) find(client int) int {
	for i, s := range c.inside {
		if s.Client == client {
			return i
		}
	}
	return -1
}

// Report is what a Checker found.
type Report struct {
	// Entered counts grants checked.
	Entered int64 `json:"entered"`
	// Violations counts grants made while another client was inside.
	Violations int64 `json:"violations"`
	// TokenRegressions counts grants whose token was not above every
	// earlier grant's.
	TokenRegressions int64 `json:"token_regressions"`
	// Unbalanced counts Enter without Exit by the same client and Exit
	// without Enter: a caller's bookkeeping slip, not a recipe's.
	Unbalanced int64 `json:"unbalanced"`
	// Overlaps are the first overlapping pairs (End -1 while open).
	Overlaps []Overlap `json:"overlaps,omitempty"`
	Details  []string  `json:"details,omitempty"`
}

// Report returns the findings so far.
func (c *Checker) Report() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Report{
		Entered:          c.entered,
		Violations:       c.violations,
		TokenRegressions: c.regressed,
		Unbalanced:       c.unbalanced,
		Overlaps:         slices.Clone(c.overlaps),
		Details:          slices.Clone(c.details.list),
	}
}

// Safety returns the findings as a results.Safety. Token regressions count
// as violations: a fencing token that does not grow cannot fence.
func (c *Checker) Safety() results.Safety {
	r := c.Report()
	return results.Safety{Checked: r.Entered, Violations: r.Violations + r.TokenRegressions, Details: r.Details}
}

// Overlaps checks recorded sections offline (for example sections reported
// by worker processes after a run) and returns every pair of different
// clients whose sections intersect, Second being the later to start. A
// section with End < Start is taken as still open at the end. Sections that
// only touch (one ends exactly when the next starts) do not overlap.
func Overlaps(sections []Section) []Overlap {
	var out []Overlap
	sweep(sections, func(cur Section, open []Section) {
		for _, a := range open {
			if a.Client != cur.Client {
				out = append(out, Overlap{First: a, Second: cur, At: cur.Start})
			}
		}
	})
	return out
}

// sweep visits sections in order of start (stable), each with the
// sections that started before it and are still open when it starts. A
// section with End < Start is open to the end; one that ends exactly when
// another starts is not open then.
func sweep(sections []Section, visit func(cur Section, open []Section)) {
	s := slices.Clone(sections)
	slices.SortStableFunc(s, func(a, b Section) int { return cmp.Compare(a.Start, b.Start) })
	end := func(x Section) time.Duration {
		if x.End < x.Start {
			return time.Duration(1<<63 - 1)
		}
		return x.End
	}
	var open []Section
	for _, cur := range s {
		open = slices.DeleteFunc(open, func(a Section) bool { return end(a) <= cur.Start })
		visit(cur, open)
		open = append(open, cur)
	}
}
