package results

import (
	"fmt"
	"time"

	"github.com/zkbench/zkbench/figures"
)

// ErrorKindStoppedWaiting is the Errors kind under which files written
// before Ops.StillWaiting counted operations still waiting when their case
// reached its bound (and counted them in Ops.Failed too). Decode moves such
// counts to Ops.StillWaiting; no writer uses the kind any more.
const ErrorKindStoppedWaiting = "stopped_waiting"

// PrimaryLatency returns the name and histogram of the latency that best
// describes res ("acquire" for locks, "failover" for elections, ...: see
// figures.SortLatencyNames), or ("", nil) if it has none.
func PrimaryLatency(res *Result) (string, *Histogram) {
	names := make([]string, 0, len(res.Latency))
	for name, h := range res.Latency {
		if h != nil {
			names = append(names, name)
		}
	}
	name := figures.PrimaryLatency(names)
	if name == "" {
		return "", nil
	}
	return name, res.Latency[name]
}

// FormatDuration prints d with three significant digits in a unit that
// suits it: 850µs, 12.3ms, 1.25s.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return trim(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		return trim(float64(d)/float64(time.Millisecond)) + "ms"
	default:
		return trim(float64(d)/float64(time.Second)) + "s"
	}
}

func trim(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
