// Package workloads drives coordination recipes under load: it opens one
// session per simulated client, runs a recipe in a closed or open load model
// for a bounded, measured interval, and turns what it saw into a
// results.Result — latency histograms, throughput over time, client-side
// counts from backends/instrument beside the servers' own counter deltas,
// fairness, safety and cost.
//
// A Workload is one load model over one recipe family, declared by its
// Spec (spec.go). Every workload's Run goes through one driver
// (driver.go): it validates the case, opens and closes the sessions,
// bounds and drains the interval, notes lost sessions, checks the
// namespace for leftovers and keeps the result's books; a workload brings
// its client loop and its collect step. How a case is measured (sessions,
// window, meter, series, live progress, leftovers) is package
// workloads/measure, the same for every workload.
package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// Errors returned (wrapped) by workloads, checked with errors.Is.
var (
	// ErrBadCase: the case asks for something impossible (no clients, no
	// bound, a namespace outside zkbench's).
	ErrBadCase = errors.New("workloads: bad case")
	// ErrUnknownWorkload: no workload has that name.
	ErrUnknownWorkload = errors.New("workloads: unknown workload")
	// ErrUnknownVariant: the workload has no such variant on this backend.
	ErrUnknownVariant = errors.New("workloads: unknown variant")
)

// Why a case stopped (results.Result.StoppedBy): the results' own stop
// reasons, under the names the workloads have always used.
const (
	StoppedByOps         = results.StoppedByOps
	StoppedByDuration    = results.StoppedByDuration
	StoppedByInterrupted = results.StoppedByInterrupted
	StoppedByError       = results.StoppedByError
)

// ListedNamer is an optional ability of a Workload: it says how long the
// child names its variants list on ZooKeeper are (0: the default, up to
// 52 bytes), so that each session's receive buffer holds a listing of
// every client with no more room than those names need.
type ListedNamer interface {
	ListedName(variants []string) int
}

// ListingSizer is an optional ability of a Workload: the most children
// one ZooKeeper listing of a case of cfg may hold when that can be more
// than the case's clients (the queue's backlog), so that each session's
// receive buffer holds it; 0 where it has no bound.
type ListingSizer interface {
	LargestListing(cfg results.Config) int
}

// ReplySizer is an optional ability of a Workload: the largest reply (a
// node's data) a session reads in a case of cfg, so that each ZooKeeper
// session's receive buffer, and the send buffer of the one that writes
// it, hold it (0: nothing beyond listings).
type ReplySizer interface {
	LargestReply(cfg results.Config) int
}

// RunChecker is an optional ability of a Workload: it refuses a run's
// variants or parameters on a backend before any server starts, with an
// error that says what to give instead (the config workload's --size over
// the server's request limit).
type RunChecker interface {
	CheckRun(kind backends.Kind, variants []string, params map[string]string) error
}

// Workload runs one case of a benchmark; its Spec says what it is.
type Workload interface {
	// Run opens c.Clients sessions on c.Backend, runs c.Variant until c's
	// bounds, closes every session and checks c.Namespace for leftovers.
	//
	// Cancelling ctx stops the case early: in-flight operations are
	// withdrawn, locks released and sessions closed on fresh bounded
	// contexts, and Run returns the partial Result with StoppedBy
	// "interrupted" and a nil error. A non-nil error means the case could
	// not be run or measured (bad case, sessions that would not open); the
	// Result is then partial or empty.
	Run(ctx context.Context, c Case) (results.Result, error)
}

// Case is one (variant, clients, repeat) cell of a sweep.
type Case struct {
	// Backend opens the sessions. Pass the plain backend: the workload
	// wraps each session with backends/instrument itself. Its Admin and
	// Scraper abilities (found by type assertion) are used when present.
	Backend backends.Backend
	// Cluster is what Preflight found: member PIDs for server cost,
	// MaxClientCnxns for ZooKeeper's per-IP limit.
	Cluster backends.ClusterInfo
	// ServerPIDs, when set, gives the local servers' process ids by
	// endpoint now; the meter asks it at both edges of the case, so that a
	// server a fault restarted is measured under its new process (and its
	// cost is not compared across the two). Nil: Cluster's member PIDs.
	ServerPIDs func() map[string]int
	Variant    string
	Clients    int
	Repeat     int
	// Namespace is the case's own subtree (/zkbench/<run-id>/<case>);
	// everything the case makes lives below it. The caller removes it.
	Namespace string
	// Config holds the bounds (Duration, Ops, Warmup), the load model
	// (Rate, Hold, Think) and workload Params.
	Config results.Config
	// Log receives progress lines, timeline events and leftovers. Nil
	// discards them.
	Log Recorder
	// Processes, if set, runs the clients it names in worker processes of
	// their own, so that a fault can pause one (the lock workload only;
	// see ClientProcesses). Nil: every client is a goroutine of this
	// process.
	Processes *ClientProcesses
	// Live, if set, is told of the case's operations as they complete (a
	// status line's source). Nil: nobody watches.
	Live *measure.Live
	// Shard, if set, makes this process one shard of the case: Clients are
	// its share, and its measured interval is lined up with the other
	// shards' (the lock workload only; see CaseShard). Nil: the case is
	// this process's alone.
	Shard *CaseShard
}

// CaseShard is one shard's part in a case that several processes run
// together on one namespace, each with a share of the clients.
type CaseShard struct {
	// Index of Count shards; FirstClient is the global index of this
	// shard's client 0 (clients are numbered across shards, so a lock's
	// checker, details and results name every client once).
	Index, Count, FirstClient int
	// Total is the case's clients over every shard.
	Total int
	// Host names this machine in the results (shards on one host share
	// its clock).
	Host string
	// Scrape: this shard reads the servers' counters for the whole case;
	// the others do not read them at all.
	Scrape bool
	// Sync lines the shards up.
	Sync ShardSync
}

// ShardSync lines up the shards of one case. Its calls block until every
// shard has made the same call, until ctx ends or until a bound of its own
// passes; the error then says that the case is incomplete.
type ShardSync interface {
	// Ready is called once this shard's sessions are open, before its
	// measured interval (and warm-up) begins; the interval starts on every
	// shard when it returns.
	Ready(ctx context.Context) error
	// Done is called once this shard's sessions are closed, before the
	// namespace is checked for leftovers.
	Done(ctx context.Context) error
}

// Validate reports what is wrong with c, wrapping ErrBadCase.
func (c Case) Validate() error {
	switch {
	case c.Backend == nil:
		return fmt.Errorf("%w: no backend", ErrBadCase)
	case c.Clients < 1:
		return fmt.Errorf("%w: %d clients: need at least 1", ErrBadCase, c.Clients)
	case c.Config.Duration <= 0 && c.Config.Ops <= 0:
		return fmt.Errorf("%w: no bound: give a duration or an operation count", ErrBadCase)
	case c.Config.Duration < 0 || c.Config.Ops < 0 || c.Config.Warmup < 0:
		return fmt.Errorf("%w: negative duration, ops or warm-up", ErrBadCase)
	case c.Config.Rate < 0 || c.Config.Hold < 0 || c.Config.Think < 0:
		return fmt.Errorf("%w: negative rate, hold or think time", ErrBadCase)
	case !backends.InNamespace(c.Namespace):
		return fmt.Errorf("%w: namespace %q is not inside %s/<run-id>", ErrBadCase, c.Namespace, backends.Root)
	}
	return nil
}

// firstClient is the global index of the case's client 0 in this process.
func (c Case) firstClient() int {
	if c.Shard == nil {
		return 0
	}
	return c.Shard.FirstClient
}

func (c Case) log() Recorder {
	if c.Log == nil {
		return discard{}
	}
	return c.Log
}

// Recorder receives what a case sees besides its Result. Implementations
// must be safe for concurrent use and must not block for long.
type Recorder interface {
	// Progress is one human-readable line about the case's progress.
	Progress(line string)
	// Event is a timeline event ("session", "case", "fault") of client
	// (results.NoClient for none).
	Event(kind, what string, client int)
	// Leftovers reports nodes or keys found in the case's namespace after
	// every session closed.
	Leftovers(paths []string)
}

type discard struct{}

func (discard) Progress(string)           {}
func (discard) Event(string, string, int) {}
func (discard) Leftovers([]string)        {}

// RunLog is a Recorder that writes progress lines to an io.Writer and keeps
// timeline events and leftovers for a results.Run.
type RunLog struct {
	mu        sync.Mutex
	out       io.Writer
	start     time.Time
	timeline  []results.TimelineEvent
	leftovers []string
}

// NewRunLog returns a RunLog whose timeline is measured from start and whose
// progress lines go to out (nil: nowhere).
func NewRunLog(out io.Writer, start time.Time) *RunLog {
	if out == nil {
		out = io.Discard
	}
	return &RunLog{out: out, start: start}
}

// Progress writes line and a newline.
func (l *RunLog) Progress(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.out, line)
}

// Event appends a timeline event stamped with the time since start.
func (l *RunLog) Event(kind, what string, client int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timeline = append(l.timeline, results.TimelineEvent{At: time.Since(l.start), Kind: kind, What: what, Client: client})
}

// Leftovers appends paths.
func (l *RunLog) Leftovers(paths []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leftovers = append(l.leftovers, paths...)
}

// Timeline returns a copy of the events so far.
func (l *RunLog) Timeline() []results.TimelineEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]results.TimelineEvent(nil), l.timeline...)
}

// LeftoverPaths returns a copy of the leftovers so far.
func (l *RunLog) LeftoverPaths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.leftovers...)
}
