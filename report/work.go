package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
)

// work adds the section on the critical sections' work (the ledger
// workload), one row a result: what the checker found after the crashes,
// how each crashed operation ended, the recovery from each kill to the
// next grant, and the cost of the work per committed operation.
func (d *Document) work(cases []*analysis.Case) {
	t := Table{
		Caption: "Each operation is K account writes and a commit on a store beside the lock; a crash kills a holder " +
			"between two of them. Anomalies must be 0 for a safe work (naive shows what a crash leaves); recovery is the kill " +
			"to the next grant, the server waiting out the victim's session; requests and bytes are the work's own, per committed operation.",
		Header: []string{"case", "steps", "committed", "finished for a crash", "crashes: how they ended",
			"lost updates", "applied twice", "partial visible", "accounts off", "stale accepted", "stale rejected",
			"recovery (ms)", "requests/op", "bytes/op"},
	}
	for _, c := range cases {
		for _, r := range c.Results {
			w := r.Work
			if w == nil {
				continue
			}
			a := w.Anomalies
			n := func(v int64) string { return strconv.FormatInt(v, 10) }
			per := func(v int64) string {
				if w.Committed == 0 {
					return NotMeasured
				}
				return Num(float64(v) / float64(w.Committed))
			}
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%s", c.Key), n(int64(w.Steps)), n(w.Committed), n(w.Recovered),
				crashSummary(w.Crashes), n(a.LostUpdates), n(a.AppliedTwice), n(a.PartialVisible), n(a.Mismatched),
				n(a.StaleAccepted), n(a.StaleRejected), recoveryCell(w.Crashes), per(w.Requests), per(w.Bytes)})
		}
	}
	if len(t.Rows) == 0 {
		return
	}
	d.add(Heading{2, "Critical-section work under crashes"}, t)
}

func crashSummary(cs []results.Crash) string {
	if len(cs) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range cs {
		s := fmt.Sprintf("client %d at %s: %s", c.Client, ms(c.At)+" ms", c.Ended)
		if c.Op != "" {
			s += fmt.Sprintf(" (op %s after step %d)", c.Op, c.Step)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func recoveryCell(cs []results.Crash) string {
	var out []string
	for _, c := range cs {
		if c.Recovery > 0 {
			out = append(out, ms(c.Recovery.Round(time.Millisecond)))
		}
	}
	if len(out) == 0 {
		return NotMeasured
	}
	return strings.Join(out, ", ")
}
