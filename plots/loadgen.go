package plots

import (
	"fmt"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
)

// loadgenRow is one row of the load generator figure: what it shows, its
// axis and how one result's value is read.
type loadgenRow struct {
	side  string
	label string
	scale string
	// count: whole numbers (a mean over repeats may fall between them).
	count bool
	y     func(*results.Result) (float64, bool)
}

var loadgenRows = []loadgenRow{
	{"resident memory a client", "KB of RSS a client", Log, false, func(r *results.Result) (float64, bool) {
		return r.Cost.ClientCostPerClient / 1000, r.Cost.ClientCostPerClient > 0
	}},
	{"CPU used", "% of the cores it had", Linear, false, func(r *results.Result) (float64, bool) {
		if r.Load == nil || r.Load.Cores == 0 {
			return 0, false
		}
		return 100 * r.Load.CPUFraction, true
	}},
	{"sessions lost", "sessions lost in the case", Linear, true, func(r *results.Result) (float64, bool) {
		return float64(r.SessionsLost), r.Load != nil
	}},
}

// loadgen draws what the load generator itself spent against clients: its
// resident memory a client, its CPU against the cores it had, and the
// sessions lost (each the mean over a case's repeats). Client-bound cases
// carry a cross, as in every sweep figure. Nil when no case measured the
// load generator (older files).
func (b *builder) loadgen() (*Chart, error) {
	fig := &Chart{
		Name:  b.workload + "-loadgen",
		Title: fmt.Sprintf("%s: the load generator against clients", b.workload),
		Caption: "What zkbench itself spent in each case: resident memory a client (RSS at the end of the case " +
			"above the process's before its sessions opened, over the clients), CPU as a share of the cores it had, " +
			"and sessions lost. A cross marks a client-bound case: its figures show zkbench on that machine, not the servers.",
		Cols: len(b.backends),
	}
	rows := make([]panelRow, len(loadgenRows))
	for i, row := range loadgenRows {
		rows[i] = panelRow{
			side: row.side,
			y: func(c *analysis.Case) (float64, bool, error) {
				v, ok := c.Mean(row.y)
				return v, ok, nil
			},
			axis:  Axis{Label: row.label, Scale: row.scale, Count: row.count},
			group: row.side, // each row its own y range
		}
	}
	return b.panelRows(fig, rows)
}
