package results

import (
	"math"
	"testing"
	"time"
)

// OverNotify is a latency in units of the calibrated notify latency, and
// nothing where there is no calibration or it measured no notification.
func TestCalibrationOverNotify(t *testing.T) {
	c := &Calibration{NotifyLatency: 400 * time.Microsecond}
	if x, ok := c.OverNotify(600 * time.Microsecond); !ok || math.Abs(x-1.5) > 1e-9 {
		t.Errorf("OverNotify(600µs) over 400µs = %v %v, want 1.5 true", x, ok)
	}
	var none *Calibration
	if _, ok := none.OverNotify(time.Millisecond); ok {
		t.Error("OverNotify on no calibration reported a ratio")
	}
	if _, ok := (&Calibration{}).OverNotify(time.Millisecond); ok {
		t.Error("OverNotify without a measured notification reported a ratio")
	}
}

// OverPacedNotify is the same against the notify measured after the hold,
// and nothing where that was not measured (no hold, or an older file).
func TestCalibrationOverPacedNotify(t *testing.T) {
	c := &Calibration{NotifyLatency: 400 * time.Microsecond, NotifyPace: 50 * time.Millisecond, PacedNotifyLatency: 2 * time.Millisecond}
	if x, ok := c.OverPacedNotify(3 * time.Millisecond); !ok || math.Abs(x-1.5) > 1e-9 {
		t.Errorf("OverPacedNotify(3ms) over 2ms = %v %v, want 1.5 true", x, ok)
	}
	if _, ok := (&Calibration{NotifyLatency: time.Millisecond}).OverPacedNotify(time.Millisecond); ok {
		t.Error("OverPacedNotify without a paced notification reported a ratio")
	}
	var none *Calibration
	if _, ok := none.OverPacedNotify(time.Millisecond); ok {
		t.Error("OverPacedNotify on no calibration reported a ratio")
	}
}

// OverContendedNotify is the same against the notify measured behind
// another write, and nothing where that was not measured.
func TestCalibrationOverContendedNotify(t *testing.T) {
	c := &Calibration{NotifyLatency: 400 * time.Microsecond, ContendedNotifyLatency: 800 * time.Microsecond}
	if x, ok := c.OverContendedNotify(1200 * time.Microsecond); !ok || math.Abs(x-1.5) > 1e-9 {
		t.Errorf("OverContendedNotify(1.2ms) over 800µs = %v %v, want 1.5 true", x, ok)
	}
	if _, ok := (&Calibration{NotifyLatency: time.Millisecond}).OverContendedNotify(time.Millisecond); ok {
		t.Error("OverContendedNotify without a contended notification reported a ratio")
	}
}

// The bound is the commit and the notification on both backends: the
// fair lock's successor reads nothing since the release tells it.
func TestCalibrationBound(t *testing.T) {
	for _, c := range []Calibration{
		{Backend: "etcd", NotifyLatency: 800 * time.Microsecond, RTT: 300 * time.Microsecond},
		{Backend: "zookeeper", NotifyLatency: 800 * time.Microsecond, RTT: 300 * time.Microsecond},
	} {
		if got := c.Bound(); got != 800*time.Microsecond {
			t.Errorf("%s Bound = %v, want the notify latency 800µs", c.Backend, got)
		}
	}
	if got := (&Calibration{}).Bound(); got != 0 {
		t.Errorf("Bound without a notification = %v, want 0", got)
	}
}
