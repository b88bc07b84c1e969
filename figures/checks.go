package figures

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/zkbench/zkbench/backends"
)

// Tolerance is how far client and server counts of the same thing may
// differ, as a fraction of the larger, before a result says so.
const Tolerance = 0.05

// Check is a count that the clients and the servers both make: where the
// two differ by more than Tolerance, the result carries a note (Note).
type Check struct {
	// What is counted, as the note names it.
	What string
	// Client is the client side's count, from the instrument's totals.
	Client func(Totals) float64
	// Metric is the canonical server counter of the server side.
	Metric string
	// Known are the documented reasons (docs/figures.md) for the servers
	// to count more than the clients.
	Known []Known
	// InFlight is how far Client may be off the servers' count for calls
	// either may or may not have counted when they were read
	// (Totals.InFlight), in the check's units; nil where no call is.
	InFlight func(Totals) float64
}

// Totals are the instrument's totals over a case that the checks read
// (instrument.Counts in a run, results.ClientCounts in a file).
type Totals struct {
	WatchEvents int64
	// LateWatchEvents reached the clients for watches already abandoned.
	LateWatchEvents int64
	// Requests by instrument request type ("create", "ensure_path", ...).
	Requests map[string]int64
	// Witness is the server work the calls caused that the counts above
	// do not show; nil where the backend did not count it (older files).
	Witness *backends.Witness
	// InFlight are, by request type, the calls the servers may or may not
	// have counted at the case's two reads (results.ClientCounts.InFlight;
	// nil in older files).
	InFlight map[string]int64
}

// Known is a documented cause of the servers counting more than the
// clients, as a model: the excess it predicts from what the clients
// counted. A disagreement is explained only when the server count is the
// larger, the case ran on Backend, and the excess the causes of its
// backend predict together is within Tolerance of the server count of
// the measured excess; otherwise it is unexplained, a finding.
type Known struct {
	Backend backends.Kind
	Reason  string
	// Predict is the least and the most excess the cause accounts for,
	// from the clients' witness counts (Totals.Witness): equal where the
	// witness counts the cause itself, apart where it bounds it.
	Predict func(w backends.Witness, t Totals) (lo, hi float64)
	// Request and PerCall model files written before the clients counted
	// a witness: each call of type Request accounts for PerCall[0] to
	// PerCall[1] of the excess, the range measured over the kept runs.
	// Without Request the cause cannot be bounded in such a file.
	Request string
	PerCall [2]float64
	// Only, when set, limits the cause to cases whose counts it accepts
	// (a cause of one request type, in cases that made such requests);
	// elsewhere it is as if it were another backend's.
	Only func(Totals) bool
}

// applies: k is a cause of kind in a case with counts.
func (k Known) applies(kind backends.Kind, counts Totals) bool {
	return k.Backend == kind && (k.Only == nil || k.Only(counts))
}

// The cross-checks the workloads' meter makes on every instrumented case.
var (
	WatchEventsCheck = Check{
		What: "watch events",
		// The servers also notify watches whose ctx had ended (late).
		Client: func(c Totals) float64 { return float64(c.WatchEvents + c.LateWatchEvents) },
		Metric: backends.MetricWatchEvents,
		Known: []Known{{
			Backend: backends.Etcd,
			Reason: "etcd counts every event it sends, also those the client drops (events of a watch being " +
				"cancelled, events before the read a watch is armed with, other keys under a watched prefix), " +
				"and those still queued for a watch stream when it closes (a client closes its stream when its " +
				"last watch ends), which never reach the client: the clients count the events that reached them " +
				"on the wire, and at most two more a stream they opened",
			Predict: func(w backends.Witness, t Totals) (float64, float64) {
				lo := float64(w.WireWatchEvents - t.WatchEvents - t.LateWatchEvents)
				return lo, lo + MaxQueuedAtClose*float64(w.WatchStreams)
			},
		}, {
			Backend: backends.ZooKeeper,
			Reason: "a persistent watch's notifications carry no data: the client reads the node after each, " +
				"and a read that finds a version it delivered already (changes faster than a read come as " +
				"one) or no node delivers nothing, nor does a notification of the node's children",
			Predict: func(w backends.Witness, _ Totals) (float64, float64) { return exactly(w.SkippedWatchEvents) },
			// Cases whose clients read after persistent notifications:
			// they armed the watch in the interval, or (the config
			// workload, which arms before it) the witness counted the
			// reads.
			Only: func(t Totals) bool {
				return t.Requests["watch_data"] > 0 || (t.Witness != nil && t.Witness.WatchReads > 0)
			},
		}, {
			Backend: backends.ZooKeeper,
			Reason: "ZooKeeper 3.8 counts a deletion's notification to a persistent-recursive watch twice: " +
				"the watch sits in both the data and the child watch table, the deletion triggers both, and the " +
				"child table's trigger finds the watch again, suppresses the second notification and counts it " +
				"(ZooKeeper 3.9.0 and later hold no recursive watch in the child table: ZOOKEEPER-4466); the " +
				"clients count the deletions their recursive watches delivered",
			Predict: func(w backends.Witness, _ Totals) (float64, float64) { return exactly(w.RecursiveDeleteEvents) },
			Only:    func(t Totals) bool { return t.Witness != nil && t.Witness.RecursiveDeleteEvents > 0 },
		}},
	}
	WritesCheck = Check{
		// The label predates the queue calls and is kept, since notes in
		// older results files are matched by it: enqueue is a sequential
		// create and dequeue a delete, counted with them; set (a
		// revoker's setData) is a write too.
		What:     "writes (create+create_seq+delete)",
		Client:   func(c Totals) float64 { return writesOf(c.Requests) },
		Metric:   backends.MetricWrites,
		InFlight: func(t Totals) float64 { return writesOf(t.InFlight) },
		Known: []Known{{
			Backend: backends.Etcd,
			Reason: "etcd's gRPC counters, which the server side reads, count every Txn call as a write, and a " +
				"Predecessor told which node went (a fair-lock waiter whose predecessor left other than by a " +
				"release, or before the waiter could watch it) is a read-only Txn: it checks that node's " +
				"companion key before it ranges; so is a shared lock's PredecessorOf, which checks the " +
				"waiter's own node",
			Predict: func(w backends.Witness, _ Totals) (float64, float64) { return exactly(w.ReadTxns) },
			Request: "predecessor", PerCall: [2]float64{0, 1},
		}, {
			Backend: backends.Etcd,
			Reason:  "a lease grant and revoke, a session's start and end, are writes",
			Predict: func(w backends.Witness, _ Totals) (float64, float64) { return exactly(w.SessionWrites) },
		}, {
			Backend: backends.ZooKeeper,
			Reason: "EnsurePath of a missing path sends one create per path component, ancestors that exist " +
				"included, and ZooKeeper counts each as a write; the clients count the call once, as ensure_path",
			Predict: func(w backends.Witness, _ Totals) (float64, float64) { return exactly(w.PathCreates) },
			Request: "ensure_path", PerCall: [2]float64{5, 6},
		}, {
			Backend: backends.ZooKeeper,
			Reason:  "a session's create and its end (its close, or another connection's that expires it) are writes; a session the server times out ends with none",
			Predict: func(w backends.Witness, _ Totals) (float64, float64) { return exactly(w.SessionWrites) },
		}},
	}
)

// NamespaceWritesCheck compares the clients' writes with ZooKeeper's own
// count of the writes below zkbench's top-level node: its witness of
// zkbench's traffic on a shared server, which another client's writes do
// not move and which no documented cause excuses. ZooKeeper counts there
// each change to its tree (measured on 3.8): a multi's every operation (a
// queue node's dequeue is a set and a delete), a create that made a node
// but not one that found it there, no session's create or close (but each
// ephemeral node the server deletes as a session ends). The
// clients' side is their write calls less the writes the server refused
// (Witness.RefusedWrites: the naive lock's every waiter's create finds the
// lock node there), plus the nodes EnsurePath made, plus the changes of each
// applied multi beyond its first (Witness.MultiWrites), plus the ephemeral
// nodes sessions still had when they ended, which the server deletes then
// (Witness.EndedNodes).
var NamespaceWritesCheck = Check{
	What: "writes in zkbench's namespace (create+create_seq+delete+2 a dequeue+EnsurePath's nodes)",
	Client: func(c Totals) float64 {
		n := WritesCheck.Client(c) + float64(c.Requests["dequeue"])
		if c.Witness != nil {
			n += float64(c.Witness.PathsCreated - c.Witness.RefusedWrites + c.Witness.MultiWrites + c.Witness.EndedNodes)
		}
		return n
	},
	Metric: backends.MetricNamespaceWrites,
	// A write call in flight at a read may have been applied or not, and
	// refused or not (its refusal is counted as the answer comes); an
	// EnsurePath in flight may have made up to six nodes.
	InFlight: func(t Totals) float64 {
		return writesOf(t.InFlight) + float64(t.InFlight["dequeue"]) + 6*float64(t.InFlight["ensure_path"])
	},
}

// writesOf sums the write calls in per-type counts: create, create_seq,
// enqueue, dequeue, delete, set, update, set_if and commit (WritesCheck's
// client side).
func writesOf(n map[string]int64) float64 {
	return float64(n["create"] + n["create_seq"] + n["enqueue"] + n["dequeue"] + n["delete"] + n["set"] + n["update"] + n["set_if"] + n["commit"])
}

// MaxQueuedAtClose bounds the events etcd counts for a watch stream as it
// closes, which never reach the client: a one-shot watch ends on the event
// it waited for, its client closes the stream, and until the server has
// closed it the key's next changes (the next holder's create; with no hold
// time, its delete) are queued for it and counted. Measured: 347 and 411
// such events over 758 and 755 streams (0.46 and 0.54 a stream), a naive
// lock of 10 clients and no hold on etcd (workloads
// TestWitnessModelsOnRealServers).
const MaxQueuedAtClose = 2

// exactly is a cause the witness counts itself.
func exactly(n int64) (float64, float64) { return float64(n), float64(n) }

// Checks lists every cross-check.
func Checks() []Check { return []Check{WatchEventsCheck, WritesCheck, NamespaceWritesCheck} }

// knownMarker introduces the documented cause in a note;
// unexplainedMarker the cause a model failed to account for.
const (
	knownMarker       = "; known difference (docs/figures.md): "
	unexplainedMarker = "; UNEXPLAINED by the documented causes (docs/figures.md): "
)

// Note compares the clients' count (Client of counts) with the check's
// counter in server, for a case on backend kind. It returns "" when the
// server counter was not scraped or the two agree within Tolerance;
// otherwise the note a result carries, with both numbers and, where the
// backend has documented causes, the excess they predict beside the
// measured one: a known difference when the two agree within Tolerance
// of the server count, UNEXPLAINED otherwise.
func (c Check) Note(kind backends.Kind, counts Totals, server backends.Metrics) string {
	sv, ok := server[c.Metric]
	if !ok {
		return ""
	}
	client := c.Client(counts)
	hi := math.Max(client, sv)
	var slack float64
	if c.InFlight != nil {
		slack = c.InFlight(counts)
	}
	if hi == 0 || math.Abs(client-sv) <= Tolerance*hi+slack {
		return ""
	}
	counted := fmt.Sprintf("client %.0f, server %.0f", client, sv)
	if slack > 0 {
		counted += fmt.Sprintf(", %.0f in flight at the reads", slack)
	}
	verdict := ""
	if m, ok := c.model(kind, counts, client, sv, slack); ok {
		counted += ", " + m.counts
		verdict = m.verdict
	}
	return c.prefix() + fmt.Sprintf("by more than %.0f%%: %s (%s)", Tolerance*100, counted, c.Metric) + verdict
}

func (c Check) prefix() string { return "client and server disagree on " + c.What + " " }

// modelled is what a check's causes say of one disagreement.
type modelled struct {
	counts  string // "excess 30, predicted 29 ± 6.5": the case's own
	verdict string // knownMarker or unexplainedMarker and the causes
}

// model applies the causes of kind to an excess of sv over client; false
// where the server count is not the larger or kind has no cause.
func (c Check) model(kind backends.Kind, counts Totals, client, sv, slack float64) (modelled, bool) {
	if sv <= client {
		return modelled{}, false
	}
	var reasons []string
	var lo, hi float64
	predicted := false
	for _, k := range c.Known {
		if !k.applies(kind, counts) {
			continue
		}
		switch {
		case counts.Witness != nil && k.Predict != nil:
			l, h := k.Predict(*counts.Witness, counts)
			lo, hi = lo+l, hi+h
		case counts.Witness == nil && k.Request != "":
			// An older file: the per-call range of the kept runs.
			n := float64(counts.Requests[k.Request])
			lo, hi = lo+k.PerCall[0]*n, hi+k.PerCall[1]*n
		default:
			continue // an older file has no witness of this cause
		}
		predicted = true
		reasons = append(reasons, k.Reason)
	}
	excess := sv - client
	tol := Tolerance * sv
	var m modelled
	switch {
	case !predicted && counts.Witness == nil && slices.ContainsFunc(c.Known, func(k Known) bool { return k.applies(kind, counts) }):
		m.counts = fmt.Sprintf("excess %.0f, no client-side witness in this file", excess)
		m.verdict = unexplainedMarker + "a cause of this backend, whose witness this file does not hold"
		return m, true
	case !predicted:
		return modelled{}, false
	case lo == hi:
		m.counts = fmt.Sprintf("excess %.0f, predicted %.0f ± %.0f", excess, lo, tol)
	default:
		m.counts = fmt.Sprintf("excess %.0f, predicted %.0f to %.0f ± %.0f", excess, lo, hi, tol)
	}
	if excess >= lo-tol-slack && excess <= hi+tol+slack {
		m.verdict = knownMarker + strings.Join(reasons, "; ")
	} else {
		m.verdict = unexplainedMarker + strings.Join(reasons, "; ")
	}
	return m, true
}

// Explain returns note with its documented causes applied, when note is a
// disagreement of one of Checks written before the causes were modelled
// (a bare one, or one whose cause was given without a model); otherwise
// note unchanged.
func Explain(note string, kind backends.Kind, counts Totals, server backends.Metrics) string {
	if strings.Contains(note, unexplainedMarker) || strings.Contains(note, ", predicted ") ||
		strings.Contains(note, "no client-side witness") {
		return note
	}
	for _, c := range Checks() {
		if !strings.HasPrefix(note, c.prefix()) {
			continue
		}
		if _, ok := server[c.Metric]; !ok {
			return note
		}
		if again := c.Note(kind, counts, server); again != "" {
			return again
		}
		return note
	}
	return note
}

// Disagreement is a note of a client|server disagreement (Check.Note) read
// back in parts, so that a summary can say its words once for every case
// it applies to.
type Disagreement struct {
	// Words are the note without the case's counts: "client and server
	// disagree on watch events by more than 5% (zkbench_server_watch_events)",
	// and, when a model failed, why it is unexplained.
	Words string
	// Counts are the case's own: "client 939, server 1170", and the
	// excess against the model's prediction where there is one.
	Counts string
	// Cause is the documented cause the note gives, "" when it gives none
	// or its model did not account for the excess: then the disagreement
	// is a finding.
	Cause string
}

// Unexplained reports whether note is a client|server disagreement that no
// documented cause accounts for: a finding.
func Unexplained(note string) bool {
	d, ok := ReadNote(note)
	return ok && d.Cause == ""
}

// ReadNote reads note as a client|server disagreement of one of Checks.
// False for any other note.
func ReadNote(note string) (Disagreement, bool) {
	for _, c := range Checks() {
		rest, ok := strings.CutPrefix(note, c.prefix())
		if !ok {
			continue
		}
		var d Disagreement
		rest, d.Cause, _ = strings.Cut(rest, knownMarker)
		rest, unexplained, isUnexplained := strings.Cut(rest, unexplainedMarker)
		by, counts, ok := strings.Cut(rest, ": ")
		if !ok {
			return Disagreement{}, false
		}
		d.Words = c.prefix() + by
		if i := strings.LastIndex(counts, " ("); i >= 0 && strings.HasSuffix(counts, ")") {
			d.Words += counts[i:]
			counts = counts[:i]
		}
		if isUnexplained {
			d.Words += unexplainedMarker + unexplained
		}
		d.Counts = counts
		return d, true
	}
	return Disagreement{}, false
}
