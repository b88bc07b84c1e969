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
