package analysis

import (
	"time"

	"github.com/zkbench/zkbench/results"
)

// SummaryCell is the cell the summary's table (as --wide and markdown
// show it) gives res of run under the column headed head, "acquire p50"
// or "notif/op cli|srv"; false when the table has no such column.
func SummaryCell(run *results.Run, res *results.Result, head string) (string, bool) {
	for _, c := range summaryColumns(run) {
		if c.head == head {
			return c.cell(res), true
		}
	}
	return "", false
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
