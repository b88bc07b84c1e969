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
// limit. A closed loop that holds (--hold) also has the notification
// measured after a pause as long as the hold (calibrate.WithPace): the
// floor of a handoff that follows an idle hold, which pays a wake-up on
// the server and on both clients that back-to-back calls do not.
func (r *Runner) calibrate(ctx context.Context, b backends.Backend) error {
	var opts []calibrate.Option
	phases := "six"
	switch cfg := r.plan.cfg; {
	case cfg.Rate == 0 && cfg.Hold > 0:
		opts = append(opts, calibrate.WithPace(cfg.Hold))
		phases = "seven"
	case cfg.Rate == 0:
		opts = append(opts, calibrate.WithContention())
		phases = "seven"
	}
	r.progress("  calibrating the cluster (%s short phases)", phases)
	cal, err := calibrate.Run(ctx, b, backends.Namespace(r.plan.runID), opts...)
	if err != nil {
		return fmt.Errorf("--calibrate: %w", err)
	}
	r.res.Calibration = cal
	extra := "" // the seventh phase's figure, paced or contended
	if cal.PacedNotifyLatency > 0 {
		extra = fmt.Sprintf(", notification after %s idle %s", cal.NotifyPace, results.FormatDuration(cal.PacedNotifyLatency))
	}
	if cal.ContendedNotifyLatency > 0 {
		extra = fmt.Sprintf(", notification behind another write %s", results.FormatDuration(cal.ContendedNotifyLatency))
	}
	r.progress("  calibration: %.0f writes/s, %.0f reads/s, round trip %s, write %s, notification %s%s",
		cal.WritesPerSec, cal.ReadsPerSec, results.FormatDuration(cal.RTT),
		results.FormatDuration(cal.WriteLatency), results.FormatDuration(cal.NotifyLatency), extra)
	return nil
}
