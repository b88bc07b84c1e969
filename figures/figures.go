// Package figures is zkbench's vocabulary of figures: every number a case
// is summarised by, declared once with its key in results files, the label
// and unit a reader sees, the side that counted it (the clients' instrument
// or the servers' own counters), what it means, and which count of the
// other side it is checked against (checks.go).
//
// Results, the workloads' meter, the analysis and the renderers (terminal
// summary, plots, report, comparison) read these declarations instead of
// spelling figure names, so that adding a figure is one declaration here
// plus the code that measures it. docs/figures.md explains each figure at
// length.
package figures

import (
	"fmt"
	"strings"

	"github.com/zkbench/zkbench/backends"
)

// Side is who counted a figure.
type Side int

// Sides.
const (
	// Neither: a figure of the whole case (throughput, latency).
	Neither Side = iota
	// Client: counted in the clients by backends/instrument.
	Client
	// Server: the delta of the servers' own counters over the case.
	Server
)

func (s Side) String() string {
	switch s {
	case Client:
		return "client"
	case Server:
		return "server"
	}
	return "case"
}

// Kind is how a figure is read from a case's results.
type Kind int

// Kinds.
const (
	// PerOp: a count per successful operation, results.Result.PerOp[Key].
	PerOp Kind = iota
	// Rate: successful operations per second (results.Result.Throughput).
	Rate
	// Quantile: percentile Q of a latency histogram, in milliseconds.
	Quantile
)

// Figure is one number that describes a case.
type Figure struct {
	// Key names the figure in results files: the PerOp key for PerOp
	// figures ("watch_events"), else a short name ("throughput", "p99").
	Key string
	// Label is what a reader sees: "watch events (client)", "p99 acquire".
	Label string
	Kind  Kind
	Side  Side
	// Doc says what the figure counts, in one sentence.
	Doc string
	// Metric is, for a server PerOp figure, the canonical server counter
	// (backends.Metric...) whose delta over the case, divided by the
	// successful operations, is the figure.
	Metric string
	// Counterpart is the key of the same count made by the other side,
	// shown beside this one ("watch_events" and "server_watch_events").
	Counterpart string
	// Q is the percentile (0 to 100) of a Quantile figure, and Latency the
	// histogram it reads ("" until ForLatency names one).
	Q       float64
	Latency Latency
	// Tabled: summary tables and comparisons show it.
	Tabled bool
	// Fitted: capacity planning fits how it grows with clients.
	Fitted bool
}

// ID is the figure's stable short name in tables, comparisons and capacity
// fits: "watch_events/op" for a per-operation figure, else Key.
func (f Figure) ID() string {
	if f.Kind == PerOp {
		return f.Key + "/op"
	}
	return f.Key
}

// Unit is the figure's unit for a workload whose unit operation is op:
// "per acquisition", "acquisitions/s", "ms".
func (f Figure) Unit(op Unit) string {
	switch f.Kind {
	case Rate:
		return op.Plural() + "/s"
	case Quantile:
		return "ms"
	}
	return "per " + string(op)
}

// Header is the figure's column heading: its label and unit.
func (f Figure) Header(op Unit) string { return f.Label + " (" + f.Unit(op) + ")" }

// ForLatency returns the Quantile figure f of histogram name: its label
// becomes "p99 acquire".
func (f Figure) ForLatency(name Latency) Figure {
	f.Latency = name
	f.Label = f.Key + " " + string(name)
	return f
}

// The figures of a case.
var (
	Throughput = Figure{Key: "throughput", Label: "throughput", Kind: Rate, Tabled: true, Fitted: true,
		Doc: "succeeded operations per second of the measured interval"}

	P50  = Figure{Key: "p50", Label: "p50", Kind: Quantile, Q: 50, Tabled: true, Doc: "median latency"}
	P99  = Figure{Key: "p99", Label: "p99", Kind: Quantile, Q: 99, Tabled: true, Fitted: true, Doc: "99th percentile latency"}
	P999 = Figure{Key: "p99.9", Label: "p99.9", Kind: Quantile, Q: 99.9, Tabled: true, Doc: "99.9th percentile latency"}

	WatchEvents = Figure{Key: "watch_events", Label: "watch events (client)", Side: Client,
		Counterpart: "server_watch_events", Tabled: true, Fitted: true,
		Doc: "watch notifications delivered to the clients, including those of watches the recipe had abandoned (fan-out)"}
	ServerWatchEvents = Figure{Key: "server_watch_events", Label: "watch events (server)", Side: Server,
		Metric: backends.MetricWatchEvents, Counterpart: "watch_events", Tabled: true, Fitted: true,
		Doc: "watch notifications the servers sent (fan-out as the servers count it)"}
	WastedWakeups = Figure{Key: "wasted_wakeups", Label: "wasted wake-ups", Side: Client, Tabled: true, Fitted: true,
		Doc: "notifications that led to no progress"}
	WatchesArmed = Figure{Key: "watches_armed", Label: "watches armed", Side: Client,
		Doc: "watches the clients set"}
	Requests = Figure{Key: "requests", Label: "requests (client)", Side: Client,
		Counterpart: "server_requests", Tabled: true, Fitted: true,
		Doc: "requests the clients sent, every type"}
	ServerRequests = Figure{Key: "server_requests", Label: "requests (server)", Side: Server,
		Metric: backends.MetricRequests, Counterpart: "requests", Tabled: true, Fitted: true,
		Doc: "requests the servers received (ZooKeeper: packets, pings included)"}
	ServerWrites = Figure{Key: "server_writes", Label: "writes (server)", Side: Server,
		Metric: backends.MetricWrites, Tabled: true, Fitted: true,
		Doc: "write requests the servers processed"}
	ServerReads = Figure{Key: "server_reads", Label: "reads (server)", Side: Server,
		Metric: backends.MetricReads, Tabled: true,
		Doc: "read requests the servers processed (ZooKeeper: below /zkbench, pings excluded)"}
	BytesSent = Figure{Key: "bytes_sent", Label: "bytes sent (client)", Side: Client,
		Doc: "payload bytes the clients sent: paths and data (backends/instrument)"}
	BytesReceived = Figure{Key: "bytes_received", Label: "bytes received (client)", Side: Client, Tabled: true, Fitted: true,
		Doc: "payload bytes the clients received: data read, names listed, watch events' paths (backends/instrument)"}
	ServerBytesReceived = Figure{Key: "server_bytes_received", Label: "bytes received (server)", Side: Server,
		Metric: backends.MetricBytesReceived,
		Doc:    "bytes of the messages the servers received from clients (headers and keep-alives included)"}
	ServerBytesSent = Figure{Key: "server_bytes_sent", Label: "bytes sent (server)", Side: Server,
		Metric: backends.MetricBytesSent, Tabled: true, Fitted: true,
		Doc: "bytes of the messages the servers sent to clients (headers, stats, notifications and keep-alives included)"}
	ServerWatchesTriggeredDeleted = Figure{Key: "server_watches_triggered_deleted", Label: "watches triggered by deletes (server)",
		Side: Server, Metric: backends.MetricWatchesTriggeredOnDelete,
		Doc: "ZooKeeper watches triggered by deletes"}
	WorkRequests = Figure{Key: "work_requests", Label: "store requests (work)", Side: Client,
		Doc: "requests the critical sections' work made to the store it protects (ledger), lock traffic excluded, per committed operation"}
	WorkBytes = Figure{Key: "work_bytes", Label: "store bytes (work)", Side: Client,
		Doc: "payload bytes (paths and data, both ways) of the work's store requests (ledger), per committed operation"}
)

// all is every figure in the order tables show them: throughput, latency
// percentiles, then the per-operation counts, client side before server
// side where both count the same thing. A new figure is declared above and
// listed here; Tabled and Fitted put it in the report's and comparison's
// tables and in the capacity fits, and the code that measures it records
// it under its Key.
var all = []Figure{
	Throughput, P50, P99, P999,
	WatchEvents, ServerWatchEvents, WastedWakeups, Requests, ServerRequests, ServerWrites, ServerReads,
	BytesSent, BytesReceived, ServerBytesReceived, ServerBytesSent,
	WatchesArmed, ServerWatchesTriggeredDeleted, WorkRequests, WorkBytes,
}

// All returns every declared figure (request types aside, see RequestsOf),
// in table order.
func All() []Figure { return append([]Figure(nil), all...) }

// Latencies returns the Quantile figures, in order (p50, p99, p99.9).
func Latencies() []Figure { return pick(func(f Figure) bool { return f.Kind == Quantile }) }

// Counts returns the per-operation figures that tables show, in order.
func Counts() []Figure { return pick(func(f Figure) bool { return f.Kind == PerOp && f.Tabled }) }

// PerOpFigures returns every declared per-operation figure.
func PerOpFigures() []Figure { return pick(func(f Figure) bool { return f.Kind == PerOp }) }

// ServerPerOp returns the per-operation figures derived from a server
// counter (those with a Metric).
func ServerPerOp() []Figure {
	return pick(func(f Figure) bool { return f.Kind == PerOp && f.Metric != "" })
}

// Fitted returns the figures capacity planning fits: the per-operation
// counts, then latency, then throughput (the order of the report's fit
// table).
func Fitted() []Figure {
	var out []Figure
	for _, k := range []Kind{PerOp, Quantile, Rate} {
		out = append(out, pick(func(f Figure) bool { return f.Fitted && f.Kind == k })...)
	}
	return out
}

func pick(keep func(Figure) bool) []Figure {
	var out []Figure
	for _, f := range all {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}

// ByKey returns the declared figure with key k (a PerOp key, "throughput",
// "p99", or "requests.<type>").
func ByKey(k string) (Figure, bool) {
	for _, f := range all {
		if f.Key == k {
			return f, true
		}
	}
	if t, ok := RequestType(k); ok {
		return RequestsOf(t), true
	}
	return Figure{}, false
}

// requestsPrefix starts the PerOp key of one request type's count.
const requestsPrefix = "requests."

// RequestsOf is the per-operation figure of the clients' requests of type
// typ (an instrument request type: "create", "get", "exists_w", ...).
func RequestsOf(typ string) Figure {
	return Figure{Key: requestsPrefix + typ, Label: typ + " (client)", Side: Client,
		Doc: fmt.Sprintf("%s requests the clients sent", typ)}
}

// RequestType returns the request type of a "requests.<type>" key.
func RequestType(key string) (string, bool) {
	t, ok := strings.CutPrefix(key, requestsPrefix)
	return t, ok && t != ""
}

// Figures of one workload, recorded in PerOp beside the common ones and
// read by that workload's own tables (the paper barrier preset); no
// summary table shows them.
var (
	RequestsPerEnter = Figure{Key: "requests_per_enter", Label: "requests per enter (client)", Side: Client,
		Doc: "barrier: requests of Enter per participant pass"}
	RequestsPerLeave = Figure{Key: "requests_per_leave", Label: "requests per leave (client)", Side: Client,
		Doc: "barrier: requests of Leave per participant pass"}
	WatchEventsPerEnter = Figure{Key: "watch_events_per_enter", Label: "watch events per enter (client)", Side: Client,
		Doc: "barrier: notifications consumed in Enter per participant pass"}
	WatchEventsPerLeave = Figure{Key: "watch_events_per_leave", Label: "watch events per leave (client)", Side: Client,
		Doc: "barrier: notifications consumed in Leave per participant pass"}
	WatchEventsPerObserver = Figure{Key: "watch_events_per_observer", Label: "watch events per observer (client)", Side: Client,
		Doc: "observers: the observers' notifications per failover, divided by the observers"}
	CandidateWatchEvents = Figure{Key: "candidate_watch_events", Label: "watch events (candidates)", Side: Client,
		Doc: "observers: the candidates' notifications per failover"}
)

// Figures of the config workload.
var (
	// VersionsSkipped: per update, the clients that never loaded that
	// version (they went from an older one to a newer one).
	VersionsSkipped = Figure{Key: "versions_skipped", Label: "clients that skipped the version", Side: Client,
		Doc: "config: per update, how many clients never loaded that version (a one-shot watch re-arming, a poll interval)"}
	// BeforeReply: per update, the clients that loaded it before the
	// writer had its reply. Those reloads are in "propagate_start" only:
	// "propagate" counts from the reply and holds no negative times.
	BeforeReply = Figure{Key: "reloads_before_reply", Label: "reloads before the write's reply", Side: Client,
		Doc: "config: per update, how many clients loaded the version before the writer's call returned (counted in propagate_start, not in propagate)"}
)

// PerParticipant is f divided by a barrier's participants: key
// "<key>_per_participant".
func PerParticipant(f Figure) Figure {
	f.Key += "_per_participant"
	f.Label += " per participant"
	f.Counterpart, f.Tabled, f.Fitted, f.Metric = "", false, false, ""
	f.Doc += ", per participant"
	return f
}

// Figures of the shared lock workloads (rwlock, revoke), recorded in PerOp
// beside the common ones; docs/results.md tables them. No summary table
// shows them.
var (
	NecessaryWakeups = Figure{Key: "necessary_wakeups", Label: "needed wake-ups", Side: Client,
		Doc: "rwlock, revoke: notifications that let their waiter in (the last of a wait): a writer's release that admits a batch of readers wakes each of them, all needed"}
	ReadersAtOnce = Figure{Key: "readers_at_once", Label: "readers at once", Side: Neither,
		Doc: "rwlock: the mean, over reader grants, of the readers holding the lock at the grant, itself included (a mean, not a count per acquisition)"}
	WriterOvertaken = Figure{Key: "writer_overtaken", Label: "readers overtaking a writer", Side: Neither,
		Doc: "rwlock: reader grants that overtook a waiting writer (queued behind it, granted while it waited), per acquisition: writer starvation"}
	ReadShare = Figure{Key: "read_share", Label: "reads", Side: Neither,
		Doc: "rwlock, revoke: the share of the acquisitions that were reads (0 to 1)"}
	RevokeNotifications = Figure{Key: "revoke_notifications", Label: "notifications to revoked holders", Side: Client,
		Doc: "revoke: notifications a revoked holder received from its grant to the ask reaching it, per revoked holding (not per revocation: a holding revoked at the end of the window counts, its revocation may not)"}
	ForcedRevocations = Figure{Key: "forced_revocations", Label: "forced revocations", Side: Neither,
		Doc: "revoke: revocations in which the revoker deleted the holder's node after the grace period, per revocation"}
)

// Figures of the twophase workload, recorded in PerOp beside the
// common ones.
var (
	TxAborted = Figure{Key: "aborted_share", Label: "aborted share", Side: Neither,
		Doc: "twophase: the share of decided transactions that aborted"}
)

// Figures of the membership workload.
var (
	ViewUpdatesPerMember = Figure{Key: "view_updates_per_participant", Label: "view updates per member", Side: Client,
		Doc: "membership: the times a member's view changed, per change, per member"}
	Superseded = Figure{Key: "superseded_share", Label: "superseded share", Side: Neither,
		Doc: "membership: the share of changes followed by the next before every view agreed"}
)

// Figures of the queue workload, recorded in
// PerOp per item taken; no summary table shows them (the results notes and
// docs/results.md do).
var (
	FailedClaims = Figure{Key: "failed_claims", Label: "failed claims (client)", Side: Client,
		Doc: "queue: items a consumer tried to take and found taken first, per item taken"}
	PriorityInversions = Figure{Key: "priority_inversions", Label: "priority inversions", Side: Neither,
		Doc: "queue: items taken while a more urgent one, put before the take began, had no take begun before it ended, per item taken"}
	Redeliveries = Figure{Key: "redeliveries", Label: "redeliveries", Side: Neither,
		Doc: "queue: takes of an item after its consumer was lost holding it (at-least-once variants), per item taken"}
)
