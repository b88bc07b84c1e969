// Package results is zkbench's run model: what a run measured, encoded as a
// versioned JSON file that plot, report and compare read later. A run is
// never needed twice to draw it again: histograms are stored encoded, not
// only summarised.
package results

import (
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
)

// FormatVersion is the results file format. Readers reject files of a newer
// format with a clear error; a change that old readers would misread bumps it.
const FormatVersion = 1

// Run is one invocation of `zkbench run`: configuration, environment,
// cluster, and one Result per (variant, clients, repeat) case.
type Run struct {
	Format     int       `json:"format"`
	ID         string    `json:"id"`
	Tool       string    `json:"tool"` // "zkbench <version>"
	Command    []string  `json:"command,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Status     Status    `json:"status"`
	// StatusDetail says why a run is not complete.
	StatusDetail string      `json:"status_detail,omitempty"`
	Config       Config      `json:"config"`
	Environment  Environment `json:"environment"`
	// ClusterMode: "embedded", "local", "docker" or "remote".
	ClusterMode string               `json:"cluster_mode"`
	Cluster     backends.ClusterInfo `json:"cluster"`
	Results     []Result             `json:"results"`
	// Timeline holds injected faults and session state changes, in run time.
	Timeline []TimelineEvent `json:"timeline,omitempty"`
	// Leftovers lists nodes or keys found in the namespace after cleanup.
	Leftovers []string `json:"leftovers,omitempty"`
	// Calibration is the server's raw capacity measured before the
	// workload (zkbench run --calibrate); nil when not measured.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Settings are the settings zkbench chose for the run where the user
	// set none (they follow the client count), with why. Absent in files
	// from before they were recorded.
	Settings []Setting `json:"settings,omitempty"`
	// Shard is set in a shard's file: this file holds shard Index of Count
	// of the run (zkbench run --shards); absent in a whole run's file.
	Shard *Shard `json:"shard,omitempty"`
	// MergedShards is the number of shard files `zkbench merge` made this
	// file from; 0 for a run of one process.
	MergedShards int `json:"merged_shards,omitempty"`
}

// Setting is one setting a run chose itself: its flag's name, the value
// used (as the flag would take it) and the rule that gave it.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Why   string `json:"why"`
}

// Config is what the user asked for. Workload-specific knobs go in Params.
type Config struct {
	Workload string        `json:"workload"`
	Backend  backends.Kind `json:"backend"`
	Variants []string      `json:"variants"`
	Clients  []int         `json:"clients"`
	Repeat   int           `json:"repeat"`
	// Duration and Ops bound each case; whichever comes first ends it.
	Duration time.Duration `json:"duration_ns"`
	Ops      int64         `json:"ops"`
	Warmup   time.Duration `json:"warmup_ns"`
	// Rate > 0 selects the open-loop model: operations per second, latency
	// measured from the intended start.
	Rate   float64           `json:"rate,omitempty"`
	Hold   time.Duration     `json:"hold_ns"`
	Think  time.Duration     `json:"think_ns"`
	Params map[string]string `json:"params,omitempty"`
	// Endpoints as given (empty for embedded).
	Endpoints []string `json:"endpoints,omitempty"`
}

// Environment is where the client ran.
type Environment struct {
	Hostname  string `json:"hostname"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	MemTotal  uint64 `json:"mem_total_bytes,omitempty"`
	Kernel    string `json:"kernel,omitempty"`
}

// Result is one case: one variant of one workload at one client count.
type Result struct {
	Workload string `json:"workload"`
	Variant  string `json:"variant"`
	// Unit is the workload's unit operation, what Ops and the per-operation
	// figures count; Class is the variant's herd class; Latencies are the
	// histograms the workload declares, primary first (the one that stands
	// for the case). Each is the workload's own declaration
	// (workloads.Spec); results files from before they were recorded get
	// what their workload's name meant then (see legacy.go).
	Unit      figures.Unit      `json:"unit,omitempty"`
	Class     figures.Class     `json:"class,omitempty"`
	Latencies []figures.Latency `json:"latencies,omitempty"`
	Backend   backends.Kind     `json:"backend"`
	Clients   int               `json:"clients"`
	Repeat    int               `json:"repeat"`
	// Elapsed is the measured interval (warm-up excluded).
	Elapsed time.Duration `json:"elapsed_ns"`
	// Started is when the measured interval began (wall clock, UTC): Series
	// counts from it, and Started - Run.StartedAt places the case on the
	// run's Timeline. Zero in files from before it was recorded.
	Started time.Time `json:"started,omitzero"`
	// StoppedBy says why the measured interval ended.
	StoppedBy StopReason `json:"stopped_by"`
	// Ops counts the workload's unit operation (lock acquisitions, leader
	// terms, failovers, barrier rounds). Issued = Succeeded + Failed +
	// Unknown + StillWaiting.
	Ops Ops `json:"ops"`
	// Throughput is Ops.Succeeded per second of Elapsed.
	Throughput float64 `json:"throughput"`
	// Latency histograms by name: "acquire", "handoff", "failover",
	// "enter", "leave", ...
	Latency map[figures.Latency]*Histogram `json:"latency"`
	Client  ClientCounts                   `json:"client"`
	// Server is the delta of the servers' counters over the measured case.
	Server backends.Metrics `json:"server,omitempty"`
	// ServerPartial: Server sums only some members, or leaves some of a
	// member's counters out, because a member did not answer at an edge of
	// the case or restarted (and began counting again) during it; Notes
	// say which. The server figures are then not comparable with other
	// cases', and none is divided per operation in PerOp.
	ServerPartial bool `json:"server_partial,omitempty"`
	// PerOp are derived per-operation figures by key, as package figures
	// declares them ("watch_events", "server_watch_events", "requests",
	// "requests.<type>", ...). Only figures that were measured appear.
	PerOp    map[string]float64 `json:"per_op"`
	Fairness Fairness           `json:"fairness"`
	Safety   Safety             `json:"safety"`
	// Work is what the critical sections did to the store they protect
	// (the ledger workload); nil for the others.
	Work *Work `json:"work,omitempty"`
	// Errors counts failures by kind.
	Errors map[string]int64 `json:"errors,omitempty"`
	// SessionsLost counts the clients' sessions that ended during the case
	// other than as the workload or a fault meant (Notes say whether the
	// client or the server was late). Zero in files from before it was
	// recorded, where only the notes say.
	SessionsLost int64 `json:"sessions_lost,omitempty"`
	// Faults counts what fault injection (--fault) did during the case:
	// faults started by action ("kill-server", "latency", ...), "undone",
	// "failed" and "skipped" steps, and the session state changes clients
	// saw ("session.disconnected", "session.reconnected",
	// "session.expired", "session.lost"). Absent without --fault.
	Faults map[string]int64 `json:"faults,omitempty"`
	Cost   Cost             `json:"cost"`
	// Load is what the load generator spent and how late it ran; nil in
	// files from before it was measured.
	Load *Load `json:"load,omitempty"`
	// ClientBound is set when the load generator, not the servers, was the
	// limit of the case (Load.Bound: the rule and its reasons); such a
	// case is left out of capacity answers. Nil: not client-bound, or not
	// measured (Load nil).
	ClientBound *ClientBound `json:"client_bound,omitempty"`
	// Loaded is set when other processes on the machine took a share of
	// its CPUs beside the case (Load.Loaded); such a case is left out of
	// capacity answers too, and is never called client-bound for what the
	// others did. Nil: not loaded, or the machine not measured.
	Loaded *Loaded `json:"loaded,omitempty"`
	// Watch is what the servers held for the case's watches (the config
	// and membership workloads); nil where the workload does not measure it.
	Watch *WatchFootprint `json:"watch_footprint,omitempty"`
	// Series is successful operations per interval over the case.
	Series Series `json:"series"`
	// Notes are findings a reader must see (disagreements, truncations).
	Notes []string `json:"notes,omitempty"`
	// Shard is what one shard recorded for the merge (a shard's file only).
	Shard *ShardCase `json:"shard,omitempty"`
	// Merged describes the shards a merged result was made from.
	Merged *Merged `json:"merged,omitempty"`
}

// WatchFootprint is what the servers held for a case's watches, read
// before the clients armed them and once every client had: the watches the
// servers counted (backends.MetricWatchers) and their live heap, the bytes
// still reachable after a collection the probe forced
// (backends.HeapReader). Nothing is measured while the case's interval
// runs: the forced collection pauses the servers.
type WatchFootprint struct {
	// WatchersBefore and Watchers are the watches the servers counted
	// (ZooKeeper counts a persistent watch twice, in its data and its child
	// watch tables); WatchingClients the clients that armed one (0 for
	// polling).
	WatchersBefore  float64 `json:"watchers_before"`
	Watchers        float64 `json:"watchers"`
	WatchingClients int     `json:"watching_clients"`
	HeapBefore      float64 `json:"heap_before_bytes,omitempty"`
	Heap            float64 `json:"heap_bytes,omitempty"`
	// HeapPerWatcher is (Heap-HeapBefore)/WatchingClients, when both
	// heaps were read and a client watches.
	HeapPerWatcher float64 `json:"heap_per_watcher_bytes,omitempty"`
	// HeapNoise is the difference of two heap readings taken one after
	// the other before the clients armed, nothing changed between: the
	// reading's own noise. HeapPerWatcherNoise is it per watching client,
	// what HeapPerWatcher can resolve (nil: not read; files from before
	// it was kept).
	HeapNoise           float64  `json:"heap_noise_bytes,omitempty"`
	HeapPerWatcherNoise *float64 `json:"heap_per_watcher_noise_bytes,omitempty"`
	// HeapSource says how the heap was read.
	HeapSource string `json:"heap_source,omitempty"`
	// NotMeasured says why a figure is missing.
	NotMeasured string `json:"not_measured,omitempty"`
}

// Ops accounts for every operation.
type Ops struct {
	Issued    int64 `json:"issued"`
	Succeeded int64 `json:"succeeded"`
	// Failed ended in an error inside the measured interval.
	Failed  int64 `json:"failed"`
	Unknown int64 `json:"unknown"`
	// StillWaiting were issued before the end of the measured interval and
	// still waiting at it (a lock waiter queued behind the holder, an open
	// loop's scheduled acquisition no client was free to take). Neither
	// succeeded nor failed: a healthy N-client lock case ends with about
	// N-1 of them. Files written before this field counted them in Failed,
	// under Errors[ErrorKindStoppedWaiting]; Decode moves them here.
	StillWaiting int64 `json:"still_waiting,omitempty"`
}

// Add adds p's counts to o's: the operations of one part of a case (a
// client, a shard) to the case's.
func (o *Ops) Add(p Ops) {
	o.Issued += p.Issued
	o.Succeeded += p.Succeeded
	o.Failed += p.Failed
	o.Unknown += p.Unknown
	o.StillWaiting += p.StillWaiting
}

// ClientCounts are the instrument decorator's totals over all clients.
type ClientCounts struct {
	// Requests by type: "create", "create_seq", "get", "delete",
	// "children", "exists_w", "children_w", ...
	Requests      map[string]int64 `json:"requests"`
	WatchesArmed  int64            `json:"watches_armed"`
	WatchEvents   int64            `json:"watch_events"`
	WastedWakeups int64            `json:"wasted_wakeups"`
	// LateWatchEvents: notifications that reached the clients for watches
	// whose ctx had ended (ZooKeeper keeps such watches armed), not
	// delivered to any waiter. The servers count WatchEvents + these.
	LateWatchEvents int64 `json:"late_watch_events,omitempty"`
	// BytesSent and BytesReceived are the calls' payload bytes: paths and
	// data sent; data read, names listed and watch events' paths received
	// (backends/instrument's package doc). Absent in files from before
	// they were counted.
	BytesSent     int64 `json:"bytes_sent,omitempty"`
	BytesReceived int64 `json:"bytes_received,omitempty"`
	// Witness is the server work the calls caused that the counts above
	// do not show (backends.Witness: EnsurePath's creates, read-only
	// transactions, session writes, watch events on the wire), from which
	// the documented causes of a client|server difference predict it. Nil
	// where the backend does not count it, and in older files.
	Witness *backends.Witness `json:"witness,omitempty"`
	// InFlight are, by request type, the calls the servers may or may not
	// have counted when they were read at the case's start and end (in
	// flight, or sent while the servers were read; instrument.Counts):
	// the checks allow a client|server difference this much more. Absent
	// in older files.
	InFlight map[string]int64 `json:"in_flight,omitempty"`
}

// Fairness of grants.
type Fairness struct {
	// FIFOInversions: grants made to a client that asked after another
	// client still waiting.
	FIFOInversions int64 `json:"fifo_inversions"`
	// Jain is Jain's index over per-client successful operations (1 = equal).
	Jain float64 `json:"jain"`
}

// Safety checker outcome. Violations must be 0 without injected faults.
type Safety struct {
	Checked    int64    `json:"checked"`
	Violations int64    `json:"violations"`
	Prevented  int64    `json:"prevented,omitempty"` // stale writes a fence rejected
	Details    []string `json:"details,omitempty"`
	// Fence is what the shared register the lock holders wrote to saw
	// (lock workload); nil where nothing was written. Its accepted stale
	// writes are counted in Violations, its rejected ones in Prevented.
	Fence *Fence `json:"fence,omitempty"`
}

// Fence counts lock holders' writes to a shared register: one right after
// each grant and one just before each release, each carrying the grant's
// fencing token.
type Fence struct {
	// Fenced: the register refused writes whose token was older than the
	// newest it had accepted (--fence on); otherwise it accepted every write.
	Fenced bool  `json:"fenced"`
	Writes int64 `json:"writes"`
	// Stale counts writes carrying a token older than one already granted
	// or written: a holder writing after its lock had passed on.
	Stale int64 `json:"stale"`
	// Rejected counts the stale writes the fence refused (= Safety.Prevented);
	// Stale-Rejected were accepted, and are violations.
	Rejected int64 `json:"rejected"`
}

// Cost of the run on the client and, where local, the servers.
type Cost struct {
	ClientCPUSeconds    float64 `json:"client_cpu_seconds"`
	ClientRSSBytes      uint64  `json:"client_rss_bytes"`
	ClientHeapBytes     uint64  `json:"client_heap_bytes"`
	ServerCPUSeconds    float64 `json:"server_cpu_seconds,omitempty"`
	ServerRSSBytes      uint64  `json:"server_rss_bytes,omitempty"`
	ServerCostMeasured  bool    `json:"server_cost_measured"`
	ClientCostPerClient float64 `json:"client_rss_bytes_per_client,omitempty"`
}

// Series is a count per fixed interval from the start of the measured case.
type Series struct {
	Interval time.Duration `json:"interval_ns"`
	Counts   []int64       `json:"counts"`
}

// NoClient is TimelineEvent.Client for an event that is not about one
// client (a server fault, a case boundary).
const NoClient = -1

// TimelineEvent is something that happened during a run.
type TimelineEvent struct {
	// At is the offset from Run.StartedAt.
	At   time.Duration `json:"at_ns"`
	Kind string        `json:"kind"` // "fault", "session", "case"
	What string        `json:"what"`
	// Client is the index of the client the event is about, or NoClient.
	// It is always written. Format 1 files written before it was omitted
	// only when 0: every writer has always used -1 for "no client", so a
	// missing client decodes to 0 and means client 0, and the format is
	// unchanged.
	Client int `json:"client"`
}
