package figures

import (
	"fmt"
	"math"
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
}

// Totals are the instrument's totals over a case that the checks read
// (instrument.Counts in a run, results.ClientCounts in a file).
type Totals struct {
	WatchEvents int64
	// LateWatchEvents reached the clients for watches already abandoned.
	LateWatchEvents int64
	// Requests by instrument request type ("create", "ensure_path", ...).
	Requests map[string]int64
}

// Known is a documented reason for the servers to count more than the
// clients. It explains a disagreement only when the server count is the
// larger, the case ran on Backend, and, if Request is set, the clients
// sent requests of that type.
type Known struct {
	Backend backends.Kind
	Request string
	Reason  string
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
			Reason: "etcd counts every event it sends to a watcher, also those sent to one-shot watches " +
				"that are being cancelled, which the clients drop",
		}},
	}
	WritesCheck = Check{
		// The label predates the queue calls and is kept, since notes in
		// older results files are matched by it: enqueue is a sequential
		// create and dequeue a delete, counted with them; set (a
		// revoker's setData) is a write too.
		What: "writes (create+create_seq+delete)",
		Client: func(c Totals) float64 {
			return float64(c.Requests["create"] + c.Requests["create_seq"] + c.Requests["enqueue"] +
				c.Requests["dequeue"] + c.Requests["delete"] + c.Requests["set"] + c.Requests["update"])
		},
		Metric: backends.MetricWrites,
		Known: []Known{{
			Backend: backends.Etcd,
			Request: "predecessor",
			Reason: "etcd's gRPC counters, which the server side reads, count every Txn call as a write, and a " +
				"Predecessor told which node went (the fair lock's wake-up) is a read-only Txn: it compares the " +
				"queue's last-dequeued record before it ranges",
		}, {
			Backend: backends.ZooKeeper,
			Request: "ensure_path",
			Reason: "EnsurePath of a missing path sends one create per path component, ancestors that exist " +
				"included, and ZooKeeper counts each as a write; the clients count the call once, as ensure_path",
		}},
	}
)

// Checks lists every cross-check.
func Checks() []Check { return []Check{WatchEventsCheck, WritesCheck} }

// knownMarker introduces the documented cause in a note.
const knownMarker = "; known difference (docs/figures.md): "

// Note compares the clients' count (Client of counts) with the check's
// counter in server, for a case on backend kind. It returns "" when the
// server counter was not scraped or the two agree within Tolerance;
// otherwise the note a result carries, with both numbers and, where a
// Known reason applies, that reason.
func (c Check) Note(kind backends.Kind, counts Totals, server backends.Metrics) string {
	sv, ok := server[c.Metric]
	if !ok {
		return ""
	}
	client := c.Client(counts)
	hi := math.Max(client, sv)
	if hi == 0 || math.Abs(client-sv)/hi <= Tolerance {
		return ""
	}
	n := c.prefix() + fmt.Sprintf("by more than %.0f%%: client %.0f, server %.0f (%s)",
		Tolerance*100, client, sv, c.Metric)
	if k, ok := c.known(kind, client, sv, counts.Requests); ok {
		n += knownMarker + k.Reason
	}
	return n
}

func (c Check) prefix() string { return "client and server disagree on " + c.What + " " }

// Explain returns note with its documented cause appended, when note is a
// disagreement of one of Checks that gives none (results files written
// before the causes were declared) and a Known reason applies to the
// counts the result stored; otherwise note unchanged.
func Explain(note string, kind backends.Kind, counts Totals, server backends.Metrics) string {
	if strings.Contains(note, knownMarker) {
		return note
	}
	for _, c := range Checks() {
		if !strings.HasPrefix(note, c.prefix()) {
			continue
		}
		sv, ok := server[c.Metric]
		if !ok {
			return note
		}
		if k, ok := c.known(kind, c.Client(counts), sv, counts.Requests); ok {
			return note + knownMarker + k.Reason
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
	// disagree on watch events by more than 5% (zkbench_server_watch_events)".
	Words string
	// Counts are the case's own: "client 939, server 1170".
	Counts string
	// Cause is the documented cause the note gives, "" when it gives none:
	// then the disagreement is a finding.
	Cause string
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
		by, counts, ok := strings.Cut(rest, ": ")
		if !ok {
			return Disagreement{}, false
		}
		d.Words = c.prefix() + by
		if i := strings.LastIndex(counts, " ("); i >= 0 && strings.HasSuffix(counts, ")") {
			d.Words += counts[i:]
			counts = counts[:i]
		}
		d.Counts = counts
		return d, true
	}
	return Disagreement{}, false
}

func (c Check) known(kind backends.Kind, client, server float64, requests map[string]int64) (Known, bool) {
	if server <= client {
		return Known{}, false
	}
	for _, k := range c.Known {
		if k.Backend == kind && (k.Request == "" || requests[k.Request] > 0) {
			return k, true
		}
	}
	return Known{}, false
}
