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

// PrimaryLatency returns the name and histogram of the latency that stands
// for res: the first of its workload's declared latencies
// (Result.Latencies) that it recorded, else the first recorded by name; ""
// and nil if it has none.
func PrimaryLatency(res *Result) (figures.Latency, *Histogram) {
	names := res.LatencyNames()
	if len(names) == 0 {
		return "", nil
	}
	return names[0], res.Latency[names[0]]
}

// LatencyNames lists the histograms res recorded, in its workload's
// declared order (primary first), then any others by name.
func (res *Result) LatencyNames() []figures.Latency {
	names := make([]figures.Latency, 0, len(res.Latency))
	for name, h := range res.Latency {
		if h != nil {
			names = append(names, name)
		}
	}
	res.SortLatencies(names)
	return names
}

// SortLatencies sorts names in res's workload's declared order, then by
// name.
func (res *Result) SortLatencies(names []figures.Latency) {
	figures.SortLatencies(names, res.declaredLatencies())
}

// UnitOf is the unit operation of res's workload: Result.Unit, or for a
// result that does not record it, what its workload's name meant in older
// files (figures.Operation if nothing).
func (res *Result) UnitOf() figures.Unit {
	if res.Unit != "" {
		return res.Unit
	}
	if u, ok := legacyUnits[res.Workload]; ok {
		return u
	}
	return figures.Operation
}

// ClassOf is res's variant's herd class: Result.Class, or for a result that
// does not record it, what its variant's name meant in older files.
func (res *Result) ClassOf() figures.Class {
	if res.Class != "" {
		return res.Class
	}
	return legacyClass(res.Variant)
}

// declaredLatencies is Result.Latencies, or for a result that does not
// record them, the older files' ranking.
func (res *Result) declaredLatencies() []figures.Latency {
	if res.Latencies != nil {
		return res.Latencies
	}
	return legacyPrimary
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
