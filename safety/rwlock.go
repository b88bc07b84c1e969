package safety

import (
	"slices"
	"sync"
	"time"

	"github.com/zkbench/zkbench/results"
)

// RWChecker checks a shared (read/write) lock online: a writer never holds
// with anyone, a reader never with a writer. It also measures how shared
// the lock was (readers holding at once, seen at each reader's grant) and
// writer starvation: the readers queued behind a writer (a larger token:
// the lock's queue order) that were granted while it waited
// (Entry.Overtaken). Readers granted during a writer's wait that were
// queued ahead of it do not count.
//
// Safe for concurrent use; Enter and Exit take one short lock.
type RWChecker struct {
	mu           sync.Mutex
	readers      map[int]time.Duration // client -> grant
	writers      map[int]time.Duration
	entered      int64
	violations   int64
	unbalanced   int64
	readerGrants int64
	readersSum   int64   // readers holding at each reader grant, itself included
	granted      []int64 // the tokens of the reader grants, in grant order
	overtaken    int64   // reader grants that overtook a waiting writer, summed over writers
	maxReaders   int
	details      findings
}

// NewRWChecker returns a checker with nobody inside.
func NewRWChecker() *RWChecker {
	return &RWChecker{details: findings{max: DefaultMaxDetails}, readers: map[int]time.Duration{}, writers: map[int]time.Duration{}}
}

// Ask is when a client asked, as the checker counts: the reader grants
// before it.
type Ask struct{ grants int }

// Ask records that a client asks for the lock now.
func (c *RWChecker) Ask() Ask {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Ask{grants: len(c.granted)}
}

// Entry is what the checker saw at a grant.
type Entry struct {
	// Readers hold the lock now, the granted client included if a reader.
	Readers int
	// Overtaken (writers only) counts the readers queued behind this
	// writer (token above its own) granted after it asked; 0 when the
	// grant carries no token.
	Overtaken int
}

// Enter records that client, which asked with ask, was granted the lock
// with token (its place in the lock's queue; 0 if the grant has none), to
// write or to read, at offset at.
func (c *RWChecker) Enter(client int, write bool, ask Ask, token int64, at time.Duration) Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entered++
	var e Entry
	switch {
	case write && token != 0:
		for _, t := range c.granted[min(ask.grants, len(c.granted)):] {
			if t > token {
				e.Overtaken++
			}
		}
		c.overtaken += int64(e.Overtaken)
	case !write:
		c.granted = append(c.granted, token)
	}
	if _, ok := c.readers[client]; ok {
		c.unbalanced++
		delete(c.readers, client)
	}
	if _, ok := c.writers[client]; ok {
		c.unbalanced++
		delete(c.writers, client)
	}
	mode := "read"
	if write {
		mode = "write"
	}
	for w, since := range c.writers {
		c.violations++
		c.details.add("at %v client %d was granted the lock to %s while client %d held it to write since %v",
			at.Round(time.Microsecond), client, mode, w, since.Round(time.Microsecond))
	}
	if write {
		if len(c.readers) > 0 {
			c.violations++
			readers := make([]int, 0, len(c.readers))
			for r := range c.readers {
				readers = append(readers, r)
			}
			slices.Sort(readers)
			c.details.add("at %v client %d was granted the lock to write while clients %v held it to read", at.Round(time.Microsecond), client, readers)
		}
		c.writers[client] = at
		e.Readers = len(c.readers)
		return e
	}
	c.readers[client] = at
	n := len(c.readers)
	c.readerGrants++
	c.readersSum += int64(n)
	c.maxReaders = max(c.maxReaders, n)
	e.Readers = n
	return e
}

// Exit records that client let go at offset at; it reports whether client
// held the lock.
func (c *RWChecker) Exit(client int, at time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.readers[client]; ok {
		delete(c.readers, client)
		return true
	}
	if _, ok := c.writers[client]; ok {
		delete(c.writers, client)
		return true
	}
	c.unbalanced++
	return false
}

// RWReport is what an RWChecker found.
type RWReport struct {
	Entered    int64 `json:"entered"`
	Violations int64 `json:"violations"`
	Unbalanced int64 `json:"unbalanced"`
	// ReaderGrants counts reader grants; MeanReaders is the mean, over
	// them, of the readers holding at the grant (itself included), and
	// MaxReaders the most.
	ReaderGrants int64   `json:"reader_grants"`
	MeanReaders  float64 `json:"mean_readers"`
	MaxReaders   int     `json:"max_readers"`
	// Overtaken counts reader grants that overtook a waiting writer
	// (queued behind it, granted before it), summed over the writers.
	Overtaken int64    `json:"overtaken"`
	Details   []string `json:"details,omitempty"`
}

// Report returns the findings so far.
func (c *RWChecker) Report() RWReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := RWReport{Entered: c.entered, Violations: c.violations, Unbalanced: c.unbalanced,
		ReaderGrants: c.readerGrants, MaxReaders: c.maxReaders, Overtaken: c.overtaken, Details: slices.Clone(c.details.list)}
	if c.readerGrants > 0 {
		r.MeanReaders = float64(c.readersSum) / float64(c.readerGrants)
	}
	return r
}

// Safety returns the findings as a results.Safety.
func (c *RWChecker) Safety() results.Safety {
	r := c.Report()
	return results.Safety{Checked: r.Entered, Violations: r.Violations, Details: r.Details}
}
