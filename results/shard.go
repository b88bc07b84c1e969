package results

import "time"

// Shard says that a results file holds one shard's share of a run (Run.Shard):
// shard Index of Count, every shard running the same cases on the same
// namespace with its own share of each case's clients. `zkbench merge`
// turns the Count files of one run into one file of the usual shape.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ShardCase is what one shard recorded of a case besides its share of the
// figures (Result.Shard), for the merge: which clients it ran, its clock, and
// what the merge needs to judge fairness and safety over every shard.
type ShardCase struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// FirstClient and Clients: the shard ran the case's clients with global
	// indices FirstClient .. FirstClient+Clients-1 (Result.Clients counts
	// every shard's).
	FirstClient int `json:"first_client"`
	Clients     int `json:"clients"`
	// Host is the machine the shard ran on: shards on one host share its
	// wall clock.
	Host string `json:"host,omitempty"`
	// Released is when the start barrier let this shard go (wall clock,
	// UTC): every shard leaves it on the same event, so their spread bounds
	// the shards' clock skew plus the barrier's notification latency.
	Released time.Time `json:"released"`
	// Base is the wall-clock time of offset 0 of Sections (the start of the
	// shard's workers); Result.Started is the start of its measured window.
	Base time.Time `json:"base"`
	// Scraped: this shard read the servers' counters for the whole case
	// (shard 0); the others leave Result.Server empty.
	Scraped bool `json:"scraped,omitempty"`
	// PerClient is each client's successful operations, from FirstClient
	// on, for Jain's index over every shard's clients.
	PerClient []int64 `json:"per_client,omitempty"`
	// Sections are the shard's lock grants, every one of the case (warm-up
	// included), for the check of mutual exclusion across shards.
	Sections *Sections `json:"sections,omitempty"`
	// Incomplete says why the case is not whole in this shard's view (a
	// shard that did not reach the end barrier); empty when it is.
	Incomplete string `json:"incomplete,omitempty"`
}

// Sections are critical sections, one per index of the parallel slices:
// Client (global index) held the lock with fencing token Token (0: none)
// from Enter to Exit, offsets from ShardCase.Base. A section whose end was
// not seen (its holder's session or process ended) has Exit == Enter.
type Sections struct {
	Client []int           `json:"client"`
	Token  []int64         `json:"token"`
	Enter  []time.Duration `json:"enter_ns"`
	Exit   []time.Duration `json:"exit_ns"`
}

// Len is the number of sections.
func (s *Sections) Len() int {
	if s == nil {
		return 0
	}
	return len(s.Client)
}

// Add appends one section and returns its index.
func (s *Sections) Add(client int, token int64, enter time.Duration) int {
	s.Client = append(s.Client, client)
	s.Token = append(s.Token, token)
	s.Enter = append(s.Enter, enter)
	s.Exit = append(s.Exit, enter)
	return len(s.Client) - 1
}

// Merged says that a result was merged from shards (Result.Merged): each
// shard's clock and clients, and how far apart the shards' clocks were.
type Merged struct {
	Shards []ShardClock `json:"shards"`
	// Skew is the spread of the shards' barrier releases (latest minus
	// earliest): the clock skew between shards plus the barrier's
	// notification latency, an upper bound on both.
	Skew time.Duration `json:"skew_ns"`
	// SameClock: every shard ran on one host, so their wall clocks are one
	// clock and safety across shards is judged with no tolerance; otherwise
	// overlaps shorter than Skew are reported, not counted.
	SameClock bool `json:"same_clock"`
	// Sections is how many critical sections were judged across shards.
	Sections int `json:"sections"`
}

// ShardClock is one shard's place in a merged result.
type ShardClock struct {
	Index       int       `json:"index"`
	Host        string    `json:"host,omitempty"`
	FirstClient int       `json:"first_client"`
	Clients     int       `json:"clients"`
	Started     time.Time `json:"started"`
	Released    time.Time `json:"released"`
	// Offset is this shard's barrier release minus the earliest one.
	Offset time.Duration `json:"offset_ns"`
	// Elapsed is the shard's own measured interval, from Started.
	Elapsed time.Duration `json:"elapsed_ns"`
	Ops     int64         `json:"ops"`
}

// ShareOf is shard index's share of n clients among count shards: clients
// first .. first+size-1, contiguous blocks whose sizes differ by at most one.
func ShareOf(n, index, count int) (first, size int) {
	first = index * n / count
	return first, (index+1)*n/count - first
}
