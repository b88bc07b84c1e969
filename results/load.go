package results

import (
	"fmt"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
)

// Load is what the load generator, the zkbench process that ran the
// clients, spent and how late it ran over a case's measured interval: the
// figures that tell a limit of the clients from a limit of the servers.
type Load struct {
	// Cores is what the process could run on: GOMAXPROCS during the case.
	Cores int `json:"cores"`
	// CPUFraction is the process's CPU time over the interval divided by
	// elapsed × Cores (Cost.ClientCPUSeconds / (Elapsed × Cores)): 1 means
	// every core busy all the time.
	CPUFraction float64 `json:"cpu_fraction"`
	// CPUNotMeasured: the process's CPU time could not be read (no /proc);
	// CPUFraction is then 0 and means nothing.
	CPUNotMeasured bool `json:"cpu_not_measured,omitempty"`
	// RunQueueShare is how long the process's threads waited, runnable,
	// for a CPU (Linux schedstat) over elapsed × Cores: CPU the process
	// wanted and did not get, because other processes held the machine's
	// CPUs or it had more runnable threads than cores. CPUFraction +
	// RunQueueShare is its demand for CPU.
	RunQueueShare float64 `json:"run_queue_share,omitempty"`
	// ServerInProcess: the server ran inside this process (embedded etcd),
	// so CPUFraction and the latencies below include its work.
	ServerInProcess bool `json:"server_in_process,omitempty"`
	// Sched is the Go scheduler latency over the interval: how long
	// goroutines waited, runnable, before they ran (runtime/metrics
	// /sched/latencies:seconds, the difference of its histogram).
	Sched Spread `json:"sched_latency"`
	// GCPauses are the stop-the-world pauses of the garbage collector over
	// the interval (/sched/pauses/total/gc:seconds).
	GCPauses Spread `json:"gc_pauses"`
	// TimerLateness is how late a 50 ms ticker of the meter's own ran: a
	// timer-driven goroutine's delay, like that of a keep-alive's timer.
	TimerLateness Spread `json:"timer_lateness"`
	// HeapPeakBytes and RSSPeakBytes are the largest live heap
	// (/memory/classes/heap/objects:bytes) and resident memory (/proc)
	// sampled every 50 ms over the interval.
	HeapPeakBytes uint64 `json:"heap_peak_bytes"`
	RSSPeakBytes  uint64 `json:"rss_peak_bytes,omitempty"`
	// KeepAlives is how late the sessions' keep-alives ran; nil where the
	// backend does not report them.
	KeepAlives *KeepAlives `json:"keep_alives,omitempty"`
	// LatencyP99 is the p99 of the case's primary latency (0: none), which
	// the scheduler latency is weighed against (Bound).
	LatencyP99 time.Duration `json:"latency_p99_ns,omitempty"`
	// ServiceP99 is the p99 of one operation's service where the workload
	// times it apart from its queue (the lock's handoff: a release to the
	// next grant), which the scheduler latency is weighed against too: it
	// does not grow with the number of waiters as LatencyP99 does (0: not
	// recorded; ServiceOf).
	ServiceP99 time.Duration `json:"service_p99_ns,omitempty"`
	// Machine is what the whole machine's CPUs did over the interval,
	// other processes' load among it; nil where /proc could not be read
	// (and in files written before zkbench measured it).
	Machine *Machine `json:"machine,omitempty"`
}

// Machine is what a machine's CPUs did over a case's measured interval, in
// CPU seconds, from /proc/stat and each process's /proc/<pid>/stat: what
// zkbench and its servers took, and what other processes took beside them.
type Machine struct {
	// Cores is the machine's CPUs (not GOMAXPROCS); Elapsed the interval.
	Cores   int           `json:"cores"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Busy is every process's user, nice and system time. Own is the part
	// zkbench's processes took: the process the run started from and
	// every process below it (local shards, client worker processes, the
	// servers it started as processes). Servers is the part of servers on
	// this machine that are not below it (containers). Kernel is the
	// kernel's threads' part (network and block work among it). Others is
	// the CPU time of the processes that are not zkbench's, each read from
	// its own /proc/<pid>/stat (not Busy - Own - Kernel, which would mix the
	// kernel's two clocks), less Servers, plus the container engine's time
	// when the run had no containers.
	Busy    float64 `json:"busy_cpu_seconds"`
	Own     float64 `json:"own_cpu_seconds"`
	Servers float64 `json:"servers_cpu_seconds,omitempty"`
	Kernel  float64 `json:"kernel_cpu_seconds"`
	Others  float64 `json:"others_cpu_seconds"`
	// Steal is the time the hypervisor ran another guest while this
	// machine's CPUs wanted to run (0 on bare metal); it is not in Busy.
	Steal float64 `json:"steal_cpu_seconds"`
}

// capacity is the CPU seconds m's interval held.
func (m *Machine) capacity() float64 { return m.Elapsed.Seconds() * float64(m.Cores) }

// OthersShare is Others over the machine's cores and the interval: 0.5 is
// one of two cores busy all the time with other processes' work.
func (m *Machine) OthersShare() float64 {
	if m == nil || m.capacity() <= 0 {
		return 0
	}
	return m.Others / m.capacity()
}

// StealShare is Steal over the machine's cores and the interval.
func (m *Machine) StealShare() float64 {
	if m == nil || m.capacity() <= 0 {
		return 0
	}
	return m.Steal / m.capacity()
}

// The loaded-machine rule's bounds (Load.Loaded).
const (
	// MaxOthersShare: other processes may take up to a tenth of the
	// machine's cores beside a case before the case counts as measured on
	// a loaded machine. Measured on this project's 2-core VM with
	// `zkbench run`: 0% in every case of a quiet machine, 71% to 96%
	// beside two busy loops.
	MaxOthersShare = 0.10
	// MaxStealShare: the hypervisor may take up to a twentieth.
	MaxStealShare = 0.05
)

// Loaded marks a case measured while other processes (or, on a VM, other
// guests) took a share of the machine's CPUs: its latencies and
// throughput describe a shared machine, not the servers or zkbench alone.
// Capacity planning leaves such cases out, as it does client-bound ones.
type Loaded struct {
	// OthersShare and StealShare are Machine's.
	OthersShare float64 `json:"others_share"`
	StealShare  float64 `json:"steal_share,omitempty"`
	// Detail gives the numbers: "other processes took 62% of 2 cores".
	Detail string `json:"detail"`
}

// String is Detail.
func (x *Loaded) String() string { return x.Detail }

// The words of a loaded case's note around its Detail (Loaded.Note).
const (
	loadedNoteStart = "loaded machine: "
	loadedNoteEnd   = " beside this case (not zkbench, its servers or the kernel); left out of capacity answers"
)

// Note is the note a loaded case carries.
func (x *Loaded) Note() string { return loadedNoteStart + x.Detail + loadedNoteEnd }

// ReadLoadedNote reads back a note that Loaded.Note wrote: the words every
// such note shares ("loaded machine: other processes took their share
// beside the case ...") and the case's own Detail. False for any other
// note.
func ReadLoadedNote(note string) (words, detail string, ok bool) {
	if detail, ok = between(note, loadedNoteStart, loadedNoteEnd); !ok {
		return "", "", false
	}
	return loadedNoteStart + "other processes took a share of its CPUs" + loadedNoteEnd, detail, true
}

// Loaded applies the loaded-machine rule to l: other processes took at
// least MaxOthersShare of the machine's cores over the interval, or the
// hypervisor at least MaxStealShare. Nil for a case that was not loaded,
// or where the machine was not measured.
func (l *Load) Loaded() *Loaded {
	if l == nil || l.Machine == nil {
		return nil
	}
	m := l.Machine
	x := Loaded{OthersShare: m.OthersShare(), StealShare: m.StealShare()}
	var parts []string
	if x.OthersShare >= MaxOthersShare {
		parts = append(parts, fmt.Sprintf("other processes took %.0f%% of %d cores", 100*x.OthersShare, m.Cores))
	}
	if x.StealShare >= MaxStealShare {
		parts = append(parts, fmt.Sprintf("the hypervisor took %.0f%% of %d cores (steal)", 100*x.StealShare, m.Cores))
	}
	if len(parts) == 0 {
		return nil
	}
	x.Detail = strings.Join(parts, " and ")
	return &x
}

// Spread summarises a distribution of durations read from bucketed
// histograms: quantiles and the maximum are bucket upper bounds (within a
// factor of about 1.2 for runtime/metrics' buckets); Total is exact where
// the source gives it, else the sum of bucket midpoints.
type Spread struct {
	Count int64         `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
	Total time.Duration `json:"total_ns,omitempty"`
}

// KeepAlives is how late the sessions' keep-alives ran during the interval.
type KeepAlives struct {
	// What names what was timed: "ping sent" (how long after it was due
	// each keep-alive left the client: ZooKeeper's pings, etcd's lease
	// keep-alives) or "response" (etcd in files written before zkbench
	// sent its own keep-alives: the gap between keep-alive responses
	// beyond the lease's TTL/3 and clientv3's 500 ms keep-alive loop,
	// which includes the server's answer).
	What string `json:"what"`
	// Interval is the keep-alives' period (ZooKeeper: negotiated session
	// timeout / 3; etcd: TTL / 3), the largest over the sessions.
	Interval time.Duration `json:"interval_ns"`
	// Lateness of each keep-alive; Late counts those later than LateBound.
	Lateness Spread `json:"lateness"`
	Late     int64  `json:"late"`
	// Replies is the round trip of the keep-alives that were answered
	// (ZooKeeper pings: send to reply); zero Count where not observable.
	Replies Spread `json:"replies,omitzero"`
}

// LateBound is how late a keep-alive may run before it counts as late:
// a tenth of its interval, at least 100 ms (backends.KeepAliveLateBound).
func LateBound(interval time.Duration) time.Duration { return backends.KeepAliveLateBound(interval) }

// BoundReason is one reason a case was client-bound (ClientBound).
type BoundReason string

// Reasons for a case to be client-bound.
const (
	// BoundCPU: the process used at least MaxCPUFraction of its cores, or
	// used at least half of them and wanted MaxCPUFraction in all, what it
	// waited for in the run queue included (on a shared machine a process
	// that would use every core gets less).
	BoundCPU BoundReason = "cpu"
	// BoundStarved: the process waited, runnable, for a CPU at least
	// MinStarvedShare of its cores (RunQueueShare), wanting at least
	// MaxCPUFraction of them in all (CPUFraction + RunQueueShare): the
	// machine was oversubscribed, by other processes or by servers on it,
	// and the clients ran late.
	BoundStarved BoundReason = "starved"
	// BoundScheduler: goroutines waited at least MaxSchedP99 to run, at
	// the 99th percentile, and that wait is at least SchedShare of the
	// case's own p99 latency: the client's delay is a visible part of what
	// it measured. (A herd makes every waiter runnable at once, so a naive
	// lock's scheduler p99 passes 10 ms at 100 clients with the process
	// half idle, beside acquire latencies of seconds.)
	//
	// At thousands of waiters the case's p99 is mostly queue and grows with
	// N, so the rule also weighs the scheduler's p99 against the service
	// of one operation (ServiceP99): a goroutine that waits longer to run
	// than the server's slowest handoffs takes is the case's limit
	// whatever the queue.
	BoundScheduler BoundReason = "scheduler"
	// BoundKeepAlive: at least MaxLateKeepAlives of the keep-alives the
	// client sent left late, or one left a whole keep-alive interval late
	// (a third of the session timeout: one more such delay and the session
	// expires, however few keep-alives were late of the many that many
	// sessions send) (ZooKeeper pings; an etcd response gap, which
	// includes the server, counts only with scheduler latency above half
	// of MaxSchedP99).
	BoundKeepAlive BoundReason = "keepalive"
)

// The client-bound rule's bounds.
const (
	MaxCPUFraction  = 0.90
	MinStarvedShare = 0.50
	MaxSchedP99     = 10 * time.Millisecond
	SchedShare      = 0.10
	// MaxLateKeepAlives is a fraction of the keep-alives.
	MaxLateKeepAlives = 0.01
)

// ClientBound marks a case whose load generator, not the servers, was
// the limit: its throughput, latency and fairness describe zkbench on this
// machine. Capacity planning leaves such cases out.
type ClientBound struct {
	Reasons []BoundReason `json:"reasons"`
	// Detail gives the numbers behind each reason.
	Detail string `json:"detail"`
}

// String is the reasons and their numbers: "cpu (97% of 2 cores)".
func (b *ClientBound) String() string { return b.Detail }

// The words of a client-bound case's note around its Detail (Note).
const (
	boundNoteHead     = "client-bound: the load generator, not the servers, was the limit of"
	boundNoteStart    = boundNoteHead + " this case: "
	boundNoteEmbedded = " (the embedded server shares the process)"
	boundNoteEnd      = "; left out of capacity answers"
)

// Note is the note a client-bound case carries: the rule's verdict and
// b's Detail, and, when the servers ran in the zkbench process
// (Load.ServerInProcess), that they shared it.
func (b *ClientBound) Note(serverInProcess bool) string {
	n := boundNoteStart + b.Detail
	if serverInProcess {
		n += boundNoteEmbedded
	}
	return n + boundNoteEnd
}

// ReadBoundNote reads back a note that Note wrote: its words, the same for
// every case ("client-bound: ... was the limit of the case (the embedded
// server shares the process); left out of capacity answers"), and the
// case's own Detail. False for any other note.
func ReadBoundNote(note string) (words, detail string, ok bool) {
	rest, ok := between(note, boundNoteStart, boundNoteEnd)
	if !ok {
		return "", "", false
	}
	words = boundNoteHead + " the case"
	if detail, ok = strings.CutSuffix(rest, boundNoteEmbedded); ok {
		words += boundNoteEmbedded
	} else {
		detail = rest
	}
	return words + boundNoteEnd, detail, true
}

// between is what s holds between start and end, if it begins with start
// and ends with end.
func between(s, start, end string) (string, bool) {
	rest, ok := strings.CutPrefix(s, start)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, end)
}

// Bound applies the client-bound rule to l: the case was client-bound if
// the process used at least MaxCPUFraction of its cores (or half of them,
// wanting MaxCPUFraction with the run queue), or waited for a CPU at least
// MinStarvedShare of them (wanting MaxCPUFraction in all), or its scheduler
// latency p99 reached MaxSchedP99 and SchedShare of LatencyP99 (of
// MaxSchedP99 alone where no latency was recorded), or at least
// MaxLateKeepAlives of its keep-alives ran late (LateBound). It returns
// nil for a case that was not, or for l nil (not measured).
func (l *Load) Bound() *ClientBound {
	if l == nil {
		return nil
	}
	var b ClientBound
	var parts []string
	add := func(r BoundReason, format string, args ...any) {
		b.Reasons = append(b.Reasons, r)
		parts = append(parts, string(r)+" ("+fmt.Sprintf(format, args...)+")")
	}
	demand := l.CPUFraction + l.RunQueueShare
	// On a loaded machine the run queue, the scheduler's latency and late
	// keep-alives are the other processes' doing as much as zkbench's: the
	// case is marked loaded (Loaded), and only the CPU zkbench used itself
	// makes it client-bound.
	loaded := l.Loaded() != nil
	switch {
	case l.CPUFraction >= MaxCPUFraction:
		add(BoundCPU, "%.0f%% of %d cores", 100*l.CPUFraction, l.Cores)
	case loaded:
	case l.CPUFraction >= 0.5 && demand >= MaxCPUFraction:
		add(BoundCPU, "%.0f%% of %d cores, %.0f%% with the run queue", 100*l.CPUFraction, l.Cores, 100*demand)
	}
	if loaded {
		return b.verdict(parts)
	}
	if l.RunQueueShare >= MinStarvedShare && demand >= MaxCPUFraction {
		add(BoundStarved, "ran %.0f%% and waited for a CPU %.0f%% of %d cores: the machine was oversubscribed",
			100*l.CPUFraction, 100*l.RunQueueShare, l.Cores)
	}
	switch {
	case l.Sched.Count == 0 || l.Sched.P99 < MaxSchedP99:
	case l.ServiceP99 > 0 && l.Sched.P99 >= l.ServiceP99 && float64(l.Sched.P99) < SchedShare*float64(l.LatencyP99):
		add(BoundScheduler, "scheduler latency p99 %s, above one operation's service p99 %s", FormatDuration(l.Sched.P99),
			FormatDuration(l.ServiceP99))
	case float64(l.Sched.P99) >= SchedShare*float64(l.LatencyP99):
		if l.LatencyP99 > 0 {
			add(BoundScheduler, "scheduler latency p99 %s, %.0f%% of the case's p99 %s", FormatDuration(l.Sched.P99),
				100*float64(l.Sched.P99)/float64(l.LatencyP99), FormatDuration(l.LatencyP99))
		} else {
			add(BoundScheduler, "scheduler latency p99 %s", FormatDuration(l.Sched.P99))
		}
	}
	if k := l.KeepAlives; k != nil && k.Lateness.Count > 0 {
		clientSide := k.What == KeepAlivePingSent || l.Sched.P99 >= MaxSchedP99/2
		switch {
		case !clientSide:
		case float64(k.Late) >= MaxLateKeepAlives*float64(k.Lateness.Count):
			add(BoundKeepAlive, "%d of %d keep-alives later than %s, max %s", k.Late, k.Lateness.Count,
				FormatDuration(LateBound(k.Interval)), FormatDuration(k.Lateness.Max))
		case k.Interval > 0 && k.Lateness.Max >= k.Interval:
			add(BoundKeepAlive, "a keep-alive %s late, a whole interval (%s) of the session timeout's three", FormatDuration(k.Lateness.Max),
				FormatDuration(k.Interval))
		}
	}
	return b.verdict(parts)
}

// verdict is b with parts as its Detail, nil without reasons.
func (b *ClientBound) verdict(parts []string) *ClientBound {
	if len(b.Reasons) == 0 {
		return nil
	}
	b.Detail = strings.Join(parts, ", ")
	return b
}

// ServiceOf is the p99 of res's per-operation service where its workload
// records one apart from the queue (the handoff histogram), 0 elsewhere:
// Load.ServiceP99.
func ServiceOf(res *Result) time.Duration {
	if h := res.Latency[figures.LatencyHandoff]; h != nil && h.Count > 0 {
		return time.Duration(h.P99)
	}
	return 0
}

// What KeepAlives timed (KeepAlives.What).
const (
	KeepAlivePingSent = backends.KeepAlivePingSent
	KeepAliveResponse = backends.KeepAliveResponse
)

// LossCause says which side was late around a case's lost sessions, from
// l's figures over the whole case (the meter does not time each session on
// its own): ": the client was late (...)" when the client-bound rule holds
// or the client's own keep-alives left late, ": the server or the network
// was late (...)" when the client was on time but keep-alive replies (or,
// on etcd, responses) came late, ": the machine was loaded (...)" when
// other processes took the machine, ": neither ... was measured late" when
// neither side was, and "" when l or its keep-alives were not measured. It
// is appended to the "N sessions were lost" note.
func LossCause(l *Load) string {
	if l == nil {
		return ""
	}
	if b := l.Bound(); b != nil {
		return ": the client was late (" + b.Detail + ")"
	}
	if x := l.Loaded(); x != nil {
		return ": the machine was loaded (" + x.Detail + ")"
	}
	k := l.KeepAlives
	if k == nil {
		return ""
	}
	bound := LateBound(k.Interval)
	switch {
	case k.What == KeepAlivePingSent && k.Late > 0:
		return fmt.Sprintf(": the client was late (%d keep-alives sent more than %s after they were due, max %s)",
			k.Late, FormatDuration(bound), FormatDuration(k.Lateness.Max))
	case k.What == KeepAlivePingSent && k.Replies.Count > 0 && k.Replies.Max > bound:
		return fmt.Sprintf(": the server or the network was late (keep-alives left on time; replies took up to %s)",
			FormatDuration(k.Replies.Max))
	case k.What == KeepAliveResponse && k.Late > 0:
		return fmt.Sprintf(": the server or the network was late (%d keep-alive responses more than %s late, max %s, while the client's scheduler latency p99 was %s)",
			k.Late, FormatDuration(bound), FormatDuration(k.Lateness.Max), FormatDuration(l.Sched.P99))
	}
	return ": neither the client's keep-alives nor the replies were measured late"
}
