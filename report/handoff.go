package report

import (
	"strconv"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// handoffPath shows where each lock case's handoffs spent their time
// (workloads.HandoffPath): the p50 of the handoff, of the holder's release
// call, of the release to the next holder's watch event and of that event
// to its grant, beside the calibrated write + notify latency of the
// backend's cluster (one commit plus one notification, the floor of the
// first part) where a run calibrated it, and after the hold or behind
// another write where it calibrated those; where the servers shared the
// load generator's machine, the time an acquisition (1/throughput) beside
// its CPU floor (analysis.CPUFloor). Nothing where no case split its
// handoffs.
func (d *Document) handoffPath(runs []*results.Run, cases []*analysis.Case) {
	notify := map[backends.Kind]results.Calibration{}
	paced := false                                   // some calibration measured the notify after the hold too
	contended := false                               // or behind another write
	floors := map[*results.Result]time.Duration{}    // analysis.CPUFloor
	periods := map[*results.Result]time.Duration{}   // 1/throughput, where there is a CPU floor
	syncs := map[*results.Result]float64{}           // analysis.LogSyncs
	logFloors := map[*results.Result]time.Duration{} // analysis.LogFloor
	for _, r := range runs {
		if c := r.Calibration; c != nil && c.NotifyLatency > 0 {
			if _, ok := notify[c.Backend]; !ok {
				notify[c.Backend] = *c
				paced = paced || c.PacedNotifyLatency > 0
				contended = contended || c.ContendedNotifyLatency > 0
			}
		}
		for i := range r.Results {
			res := &r.Results[i]
			if f, ok := analysis.CPUFloor(r, res); ok {
				floors[res] = f
				periods[res], _ = analysis.Period(res) // a case with a CPU floor has a throughput
			}
			if n, ok := analysis.LogSyncs(r, res); ok {
				syncs[res] = n
			}
			if f, ok := analysis.LogFloor(r, res); ok {
				logFloors[res] = f
			}
		}
	}
	t := Table{
		Caption: "Each handoff from a holder's release to the next holder's grant, split on the clock all clients share: " +
			"the release to the next holder's last watch event before its grant (a commit plus a notification), then that " +
			"event to the grant (the next holder's own decision, with any request it makes). p50s in milliseconds, each of " +
			"its own histogram, so the two parts add up to about the handoff's p50, not exactly. Calibrated: the run's " +
			"write + notify latency on that backend (--calibrate).",
		Header: []string{"workload", "backend", "variant", "clients", "handoffs", "handoff", "release call",
			"release to event", "event to grant", "calibrated write + notify", "handoff / calibrated"},
	}
	if paced {
		t.Caption += " After the hold: the same measured after the run's hold idle before each delete, as a handoff follows a hold " +
			"(servers and clients pay a wake-up that back-to-back calls do not)."
		t.Header = append(t.Header, "calibrated after the hold", "handoff / after the hold")
	}
	if contended {
		t.Caption += " Behind another write: the same with a third session's create sent just before each delete, as a " +
			"release without a hold reaches the member beside the last holder's enqueue."
		t.Header = append(t.Header, "calibrated behind another write", "handoff / behind another write")
	}
	if len(floors) > 0 {
		t.Caption += " CPU floor: the servers' CPU an acquisition over the cores the load generator and other processes left " +
			"them (servers on the load generator's machine), the shortest mean time between acquisitions that pass through " +
			"the servers one at a time; it bounds 1/throughput (means over the case's repeats), not a percentile."
		t.Header = append(t.Header, "1/throughput", "CPU floor")
	}
	if len(syncs) > 0 {
		t.Caption += " Log syncs: each member's write-ahead log syncs an acquisition, below its writes where several " +
			"writes shared a sync."
		t.Header = append(t.Header, "log syncs")
	}
	if len(logFloors) > 0 {
		t.Caption += " Log floor: a member's log sync time an acquisition (where the servers time their syncs: etcd), " +
			"which it spends one sync at a time, so it bounds 1/throughput too."
		t.Header = append(t.Header, "log floor")
	}
	for _, c := range cases {
		if _, ok, _ := c.Quantile(figures.LatencyHandoffNotify, 50); !ok {
			continue
		}
		cell := func(name figures.Latency) string {
			v, ok, err := c.Quantile(name, 50)
			if err != nil || !ok {
				return NotMeasured
			}
			return ms(v)
		}
		handoffs := NotMeasured
		if h, err := c.Latency(figures.LatencyHandoff); err == nil && h != nil {
			handoffs = strconv.FormatInt(h.TotalCount(), 10)
		}
		calibrated, ratio := NotMeasured, NotMeasured
		if cal, ok := notify[c.Backend]; ok {
			calibrated = ms(cal.NotifyLatency)
			if v, ok, err := c.Quantile(figures.LatencyHandoff, 50); err == nil && ok {
				if x, ok := cal.OverNotify(v); ok {
					ratio = Num(x) + "x"
				}
			}
		}
		row := []string{c.Workload, string(c.Backend), c.VariantLabel(), strconv.Itoa(c.Clients), handoffs,
			cell(figures.LatencyHandoff), cell(figures.LatencyReleaseCall), cell(figures.LatencyHandoffNotify),
			cell(figures.LatencyHandoffDecide), calibrated, ratio}
		if paced {
			after, ratio := NotMeasured, NotMeasured
			if cal, ok := notify[c.Backend]; ok && cal.PacedNotifyLatency > 0 {
				after = ms(cal.PacedNotifyLatency) + " (" + cal.NotifyPace.String() + " idle)"
				if v, ok, err := c.Quantile(figures.LatencyHandoff, 50); err == nil && ok {
					if x, ok := cal.OverPacedNotify(v); ok {
						ratio = Num(x) + "x"
					}
				}
			}
			row = append(row, after, ratio)
		}
		if contended {
			behind, ratio := NotMeasured, NotMeasured
			if cal, ok := notify[c.Backend]; ok && cal.ContendedNotifyLatency > 0 {
				behind = ms(cal.ContendedNotifyLatency)
				if v, ok, err := c.Quantile(figures.LatencyHandoff, 50); err == nil && ok {
					if x, ok := cal.OverContendedNotify(v); ok {
						ratio = Num(x) + "x"
					}
				}
			}
			row = append(row, behind, ratio)
		}
		if len(floors) > 0 {
			row = append(row, meanCell(c, periods, ms), meanCell(c, floors, ms))
		}
		if len(syncs) > 0 {
			row = append(row, meanCell(c, syncs, Num))
		}
		if len(logFloors) > 0 {
			row = append(row, meanCell(c, logFloors, ms))
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.Rows) == 0 {
		return
	}
	d.add(Heading{2, "Where a handoff's time goes"}, t)
}

// meanCell is the mean of a case's figure over its results that have it
// (of), printed by format.
func meanCell[T time.Duration | float64](c *analysis.Case, of map[*results.Result]T, format func(T) string) string {
	var sum T
	n := 0
	for _, r := range c.Results {
		if v, ok := of[r]; ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return NotMeasured
	}
	return format(sum / T(n))
}
