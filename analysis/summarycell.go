package analysis

import (
	"time"

	"github.com/zkbench/zkbench/results"
)

// SummaryColumn is the column of run's summary table (as --wide and
// markdown show it) headed head, "acquire p50" or "notif/op cli|srv": the
// cell it gives each result of run; false when the table has no such
// column. The columns depend on the whole run: look one up once a run.
func SummaryColumn(run *results.Run, head string) (func(*results.Result) string, bool) {
	for _, c := range summaryColumns(run) {
		if c.head == head {
			return c.cell, true
		}
	}
	return nil, false
}

// SummaryHeads are the headings of run's summary table, every column.
func SummaryHeads(run *results.Run) []string {
	var heads []string
	for _, c := range summaryColumns(run) {
		heads = append(heads, c.head)
	}
	return heads
}

// Quantile is percentile q of h, false where h recorded nothing.
func Quantile(h *results.Histogram, q float64) (time.Duration, bool) { return quantileOf(h, q) }
