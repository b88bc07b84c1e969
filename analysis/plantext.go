package analysis

// What the plans read off kept sweeps (configplan.go, failoverplan.go)
// share in writing their answers.

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// msNum is d in milliseconds, as a number.
func msNum(d time.Duration) string { return num(Millis(d)) }

// writeNotes prints a plan's note that it extrapolates (none: ""), the
// cases it left out, then a blank line.
func writeNotes(b *strings.Builder, extrapolated string, left []string) {
	if extrapolated != "" {
		fmt.Fprintln(b, extrapolated)
	}
	for _, l := range left {
		fmt.Fprintf(b, "left out: %s\n", l)
	}
	fmt.Fprintln(b)
}

// intervalTable starts a plan's table of predicted figures, each with its
// 90% interval and where it came from.
func intervalTable(b *strings.Builder) *tabwriter.Writer {
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tpredicted\t90%% interval\tfrom\n")
	return tw
}
