package runner

import (
	"context"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner/calibrate"
)

// calibrate measures the cluster's raw capacity (plain session calls, no
// recipe) inside the run's namespace before the sweep, and stores it in the
// run so that reports can say how close each recipe runs to the server's
// limit.
func (r *Runner) calibrate(ctx context.Context, b backends.Backend) error {
	r.progress("  calibrating the cluster (six short phases)")
	cal, err := calibrate.Run(ctx, b, backends.Namespace(r.plan.runID))
	if err != nil {
		return fmt.Errorf("--calibrate: %w", err)
	}
	r.res.Calibration = cal
	r.progress("  calibration: %.0f writes/s, %.0f reads/s, round trip %s, write %s, notification %s",
		cal.WritesPerSec, cal.ReadsPerSec, results.FormatDuration(cal.RTT),
		results.FormatDuration(cal.WriteLatency), results.FormatDuration(cal.NotifyLatency))
	return nil
}
