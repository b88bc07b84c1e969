package results

import (
	"time"

	"github.com/zkbench/zkbench/backends"
)

// Calibration is the server's raw capacity on the cluster a run used,
// measured by package calibrate with plain session calls (no recipe), so a
// report can say how close each recipe runs to the server's limit.
type Calibration struct {
	Backend   backends.Kind `json:"backend"`
	StartedAt time.Time     `json:"started_at"`
	// PhaseDuration bounds each phase; Sessions is the concurrency of the
	// concurrent phases.
	PhaseDuration time.Duration      `json:"phase_duration_ns"`
	Sessions      int                `json:"sessions"`
	Phases        []CalibrationPhase `json:"phases"`

	// Summary figures, derived from Phases (0 when the phase did not run).
	//
	// WritesPerSec: creates and deletes per second the cluster committed
	// with Sessions concurrent sessions.
	WritesPerSec float64 `json:"writes_per_sec"`
	// ReadsPerSec: gets per second with Sessions concurrent sessions.
	ReadsPerSec float64 `json:"reads_per_sec"`
	// RTT: median round trip of a sequential get from one session.
	RTT time.Duration `json:"rtt_ns"`
	// WriteLatency: median sequential create or delete (one commit).
	WriteLatency time.Duration `json:"write_latency_ns"`
	// NotifyLatency: median time from the start of a delete by one session
	// to another session's watch firing on it (one commit plus one
	// notification).
	NotifyLatency time.Duration `json:"notify_latency_ns"`
	// NotifyPace and PacedNotifyLatency: NotifyLatency measured with a
	// pause of NotifyPace between the watch and the delete (the run's lock
	// hold: servers and clients idle that long before each handoff, and
	// waking costs both); 0 when not measured (no hold, or files written
	// before 2026-12-05).
	NotifyPace         time.Duration `json:"notify_pace_ns,omitempty"`
	PacedNotifyLatency time.Duration `json:"paced_notify_latency_ns,omitempty"`
	// ContendedNotifyLatency: NotifyLatency with a third session's create
	// sent just before each delete (a closed loop without a hold, where the
	// previous holder enqueues again as the next one releases); 0 when not
	// measured (a hold, or files written before 2026-12-07).
	ContendedNotifyLatency time.Duration `json:"contended_notify_latency_ns,omitempty"`
	// HandoffBound: the fastest a herd-free lock can hand over
	// (Calibration.Bound), as the file's writer computed it: files written
	// before 2026-12-05 added a read on both backends, then on etcd only,
	// whose lock made one until then; readers take Bound, not this field.
	HandoffBound time.Duration `json:"handoff_bound_ns"`
}

// Bound is the fastest handoff of the herd-free lock on the calibrated
// cluster: the release's commit and its notification (NotifyLatency). The
// successor reads nothing: on ZooKeeper the release's data change tells
// it, on etcd the release's delete without the node's companion key. 0
// where the notification was not measured.
func (c *Calibration) Bound() time.Duration {
	return max(c.NotifyLatency, 0)
}

// OverNotify is d in units of the calibrated notify latency (a handoff's
// p50 against its floor: 1 is a handoff at the floor), and false where the
// notification was not measured.
func (c *Calibration) OverNotify(d time.Duration) (float64, bool) {
	if c == nil || c.NotifyLatency <= 0 {
		return 0, false
	}
	return d.Seconds() / c.NotifyLatency.Seconds(), true
}

// OverPacedNotify is OverNotify against the paced notify latency, the
// floor of a handoff after a hold of NotifyPace; false where not measured.
func (c *Calibration) OverPacedNotify(d time.Duration) (float64, bool) {
	if c == nil || c.PacedNotifyLatency <= 0 {
		return 0, false
	}
	return d.Seconds() / c.PacedNotifyLatency.Seconds(), true
}

// OverContendedNotify is OverNotify against the contended notify latency,
// the floor of a handoff in a closed loop without a hold; false where not
// measured.
func (c *Calibration) OverContendedNotify(d time.Duration) (float64, bool) {
	if c == nil || c.ContendedNotifyLatency <= 0 {
		return 0, false
	}
	return d.Seconds() / c.ContendedNotifyLatency.Seconds(), true
}

// CalibrationPhase is one bounded measurement.
type CalibrationPhase struct {
	// Name: "sequential_create", "sequential_get", "sequential_delete",
	// "watch_notify", "concurrent_write", "concurrent_read",
	// "watch_notify_paced" (calibrate.WithPace) and
	// "watch_notify_contended" (calibrate.WithContention).
	Name string `json:"name"`
	// Kind: "write", "read" or "notify".
	Kind     string        `json:"kind"`
	Sessions int           `json:"sessions"`
	Ops      int64         `json:"ops"`
	Errors   int64         `json:"errors"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Rate is Ops per second of Elapsed.
	Rate    float64    `json:"rate"`
	Latency *Histogram `json:"latency,omitempty"`
}
