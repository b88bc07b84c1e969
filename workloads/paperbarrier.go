package workloads

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// PresetPaperBarrier names the grid of the ZooKeeper paper's double barrier
// experiment (Hunt et al., "ZooKeeper: Wait-free coordination for
// Internet-scale systems", USENIX ATC 2010, section 5.3): 50, 100 and 200
// clients each pass 200, 400, 800 and 1,600 double barriers in a row, and
// the paper tabulates the time in seconds (rows: barriers; columns: clients).
const PresetPaperBarrier = "zk-paper-barrier"

// The paper's grid.
var (
	paperClients  = []int{50, 100, 200}
	paperBarriers = []int{200, 400, 800, 1600}
)

// PaperCell is one cell of the grid: clients pass barriers in a row.
type PaperCell struct {
	Clients  int
	Barriers int
}

// PaperBarrierGrid returns the paper's grid scaled by scale (0 < scale <= 1)
// so that it fits a small machine: every client count and barrier count is
// multiplied by scale and rounded, at least 2 clients and 1 barrier. Cells
// come row by row (barriers ascending, then clients ascending), duplicates
// removed.
func PaperBarrierGrid(scale float64) ([]PaperCell, error) {
	if !(scale > 0 && scale <= 1) {
		return nil, fmt.Errorf("%w: scale %v: want a fraction of the paper's sizes, 0 < scale <= 1 (e.g. 0.1)", ErrBadCase, scale)
	}
	var cells []PaperCell
	seen := map[PaperCell]bool{}
	for _, b := range paperBarriers {
		for _, c := range paperClients {
			cell := PaperCell{
				Clients:  max(2, int(math.Round(float64(c)*scale))),
				Barriers: max(1, int(math.Round(float64(b)*scale))),
			}
			if !seen[cell] {
				seen[cell] = true
				cells = append(cells, cell)
			}
		}
	}
	return cells, nil
}

// WritePaperBarrierTable prints, for each variant and backend among rs
// (barrier results), the paper's table: one row per barrier count (the
// rounds each case began), one column per client count, each cell the mean
// total time in seconds over repeats. A cell marked * had rounds that did
// not finish. A second table gives the client requests per Enter and per
// Leave (per participant) and the servers' requests per participant per
// round, which the paper reasons about in its text.
func WritePaperBarrierTable(w io.Writer, rs []results.Result) error {
	type key struct {
		backend, variant string
	}
	groups := map[key]map[PaperCell]*paperAcc{}
	var keys []key
	for i := range rs {
		r := &rs[i]
		if r.Workload != "barrier" {
			continue
		}
		k := key{string(r.Backend), r.Variant}
		if groups[k] == nil {
			groups[k] = map[PaperCell]*paperAcc{}
			keys = append(keys, k)
		}
		cell := PaperCell{Clients: r.Clients, Barriers: int(r.Ops.Issued)}
		a := groups[k][cell]
		if a == nil {
			a = &paperAcc{}
			groups[k][cell] = a
		}
		a.secs = append(a.secs, r.Elapsed.Seconds())
		a.enter = append(a.enter, r.PerOp[figures.RequestsPerEnter.Key])
		a.leave = append(a.leave, r.PerOp[figures.RequestsPerLeave.Key])
		a.server = append(a.server, r.PerOp[figures.PerParticipant(figures.ServerRequests).Key])
		a.incomplete = a.incomplete || r.Ops.Succeeded < r.Ops.Issued || r.StoppedBy != StoppedByOps
	}
	for _, k := range keys {
		g := groups[k]
		var clients, barriers []int
		for cell := range g {
			clients = appendUnique(clients, cell.Clients)
			barriers = appendUnique(barriers, cell.Barriers)
		}
		sort.Ints(clients)
		sort.Ints(barriers)
		for _, table := range []string{"time", "requests"} {
			if table == "time" {
				fmt.Fprintf(w, "\nDouble barrier, %s %s: total time in seconds (the paper's Table 3 shape)\n", k.backend, k.variant)
			} else {
				fmt.Fprintf(w, "\nRequests per participant: client requests per Enter / per Leave, server requests per round\n")
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			header := []string{"barriers"}
			for _, c := range clients {
				header = append(header, fmt.Sprintf("%d clients", c))
			}
			fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
			for _, b := range barriers {
				row := []string{fmt.Sprint(b)}
				for _, c := range clients {
					row = append(row, g[PaperCell{Clients: c, Barriers: b}].format(table))
				}
				fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// paperAcc gathers the repeats of one cell.
type paperAcc struct {
	secs, enter, leave, server []float64
	incomplete                 bool
}

// format prints the cell for either table; "-" where nothing ran.
func (a *paperAcc) format(table string) string {
	if a == nil {
		return "-"
	}
	if table == "time" {
		s := fmt.Sprintf("%.2f", mean(a.secs))
		if a.incomplete {
			s += "*"
		}
		return s
	}
	return fmt.Sprintf("%.1f / %.1f, %.1f", mean(a.enter), mean(a.leave), mean(a.server))
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func appendUnique(xs []int, x int) []int {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}
