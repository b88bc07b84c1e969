package analysis

// The terminal summary of one run, printed at the end of `zkbench run`:
// one row per result (repeats apart), per-operation figures read as the
// cases read them (ResultPerOp), notes as Notes gives them.

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// unmeasured is what the summary prints for a figure nobody measured: never
// a zero that a reader could take for a measurement.
const unmeasured = "-"

// WriteSummary prints run as a terminal table, one row per case: backend,
// variant, clients, succeeded operations, throughput, p50/p99/p99.9 of the
// primary latency, watch events per operation seen by the clients and by the
// servers side by side, wasted wake-ups per operation, requests per operation
// client | server, payload bytes the clients received per operation beside
// the message bytes the servers sent, FIFO inversions, Jain's index ("-" where not every
// client could get a turn: JainUnmeaningful, with a note), safety
// violations, errors, operations still waiting at the end (not errors:
// results.Ops.StillWaiting), the load generator's CPU over its cores and
// whether the case was client-bound (results.Load.Bound; its note gives the
// numbers). A figure that was not measured prints as "-".
// A run with faults or a fenced register gets a second table, its safety
// (WriteSafety). Notes and leftovers follow.
func WriteSummary(w io.Writer, run *results.Run) error {
	latName := "latency"
	for i := range run.Results {
		if name, _ := results.PrimaryLatency(&run.Results[i]); name != "" {
			latName = string(name)
			break
		}
	}
	showRepeat := run.Config.Repeat > 1
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"backend", "variant", "clients"}
	if showRepeat {
		head = append(head, "rep")
	}
	head = append(head, "ops", "ops/s",
		latName+" p50", "p99", "p99.9",
		"watch ev/op cli|srv", "wasted/op", "req/op cli|srv", "B/op rx cli|srv tx",
		"FIFO inv", "Jain", "violations", "errors", "waiting at end", "client cpu", "client-bound", "stopped by")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for i := range run.Results {
		res := &run.Results[i]
		row := []string{string(res.Backend), res.Variant, fmt.Sprint(res.Clients)}
		if showRepeat {
			row = append(row, fmt.Sprint(res.Repeat))
		}
		_, h := results.PrimaryLatency(res)
		row = append(row,
			fmt.Sprint(res.Ops.Succeeded),
			formatRate(res),
			quantile(h, 50), quantile(h, 99), quantile(h, 99.9),
			pairCell(res, figures.WatchEvents),
			perOpCell(res, figures.WastedWakeups.Key),
			pairCell(res, figures.Requests),
			perOpCell(res, figures.BytesReceived.Key)+" | "+perOpCell(res, figures.ServerBytesSent.Key),
			fifo(res), jain(res), violations(res),
			fmt.Sprint(realErrors(res)),
			stillWaiting(res),
			ClientCPU(res), ClientBoundCell(res),
			string(res.StoppedBy),
		)
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("analysis: write summary: %w", err)
	}
	if needsSafetyTable(run) {
		fmt.Fprintln(w, "\nsafety:")
		if err := WriteSafety(w, run); err != nil {
			return err
		}
	}
	var notes []string
	for i := range run.Results {
		res := &run.Results[i]
		for _, n := range Notes(res) {
			notes = append(notes, fmt.Sprintf("%s/%s/%d: %s", res.Backend, res.Variant, res.Clients, n))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
	if len(run.Leftovers) > 0 {
		fmt.Fprintf(w, "\nleftovers after cleanup (%d):\n", len(run.Leftovers))
		for _, p := range run.Leftovers {
			fmt.Fprintln(w, "  "+p)
		}
	}
	if run.Status != results.StatusComplete {
		fmt.Fprintf(w, "\nrun %s: %s", run.ID, run.Status)
		if run.StatusDetail != "" {
			fmt.Fprintf(w, " (%s)", run.StatusDetail)
		}
		fmt.Fprintln(w)
	}
	return nil
}

func formatRate(res *results.Result) string {
	if res.Elapsed <= 0 {
		return unmeasured
	}
	return formatFloat(res.Throughput)
}

func quantile(h *results.Histogram, q float64) string {
	if h == nil || h.Count == 0 {
		return unmeasured
	}
	var v int64
	switch q {
	case 50:
		v = h.P50
	case 99:
		v = h.P99
	case 99.9:
		v = h.P999
	default:
		d, err := h.Quantile(q)
		if err != nil {
			return unmeasured
		}
		v = int64(d)
	}
	return results.FormatDuration(time.Duration(v))
}

func formatFloat(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func perOpCell(res *results.Result, key string) string {
	v, ok := ResultPerOp(res, key)
	if !ok {
		return unmeasured
	}
	return formatFloat(v)
}

// pairCell prints a client figure and its server counterpart: "cli | srv".
func pairCell(res *results.Result, client figures.Figure) string {
	return perOpCell(res, client.Key) + " | " + perOpCell(res, client.Counterpart)
}

// Fairness is measured when Jain's index was computed: it lies in [1/n, 1]
// whenever any operation succeeded, so 0 means nobody computed it.
func fifo(res *results.Result) string {
	if res.Fairness.Jain == 0 {
		return unmeasured
	}
	return fmt.Sprint(res.Fairness.FIFOInversions)
}

// jain prints "-" for an index not measured or not meaningful (Notes says
// why: JainUnmeaningful).
func jain(res *results.Result) string {
	j, ok := jainMeaningful(res)
	if !ok {
		return unmeasured
	}
	return fmt.Sprintf("%.3f", j)
}

// ClientCPU is the load generator's CPU over its cores, "97%", or "-"
// where not measured (results.Load).
func ClientCPU(res *results.Result) string {
	if res.Load == nil || res.Load.Cores == 0 || res.Load.CPUNotMeasured {
		return unmeasured
	}
	return fmt.Sprintf("%.0f%%", 100*res.Load.CPUFraction)
}

// ClientBoundCell is "no", the client-bound reasons ("cpu,scheduler"), or
// "-" where the load generator was not measured.
func ClientBoundCell(res *results.Result) string {
	switch {
	case res.ClientBound != nil:
		rs := make([]string, len(res.ClientBound.Reasons))
		for i, r := range res.ClientBound.Reasons {
			rs[i] = string(r)
		}
		return strings.Join(rs, ",")
	case res.Load == nil:
		return unmeasured
	}
	return "no"
}

func stillWaiting(res *results.Result) string {
	return fmt.Sprint(res.Ops.StillWaiting)
}

func violations(res *results.Result) string {
	if res.Safety.Checked == 0 {
		return unmeasured
	}
	return fmt.Sprint(res.Safety.Violations)
}

func realErrors(res *results.Result) int64 {
	var n int64
	for kind, c := range res.Errors {
		if kind != results.ErrorKindStoppedWaiting {
			n += c
		}
	}
	return n
}

func needsSafetyTable(run *results.Run) bool {
	for i := range run.Results {
		res := &run.Results[i]
		if len(res.Faults) > 0 || res.Safety.Prevented > 0 || (res.Safety.Fence != nil && res.Safety.Fence.Fenced) {
			return true
		}
	}
	return false
}

// WriteSafety prints one row per case of what its safety checks found and
// what faults did: grants (or terms, rounds) checked, violations of the
// recipe's promise (exclusion: overlapping holders and fencing tokens that
// did not grow), the lock holders' writes to the shared register (--fence:
// the register's mode, writes, stale writes, and of those the accepted and
// the rejected), the faults started by action, and the session state
// changes the clients saw. "-" marks what was not measured.
func WriteSafety(w io.Writer, run *results.Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "backend\tvariant\tclients\tchecked\tviolations\tfence\twrites\tstale\taccepted\trejected\tfaults\tsessions")
	for i := range run.Results {
		res := &run.Results[i]
		row := []string{string(res.Backend), res.Variant, fmt.Sprint(res.Clients), fmt.Sprint(res.Safety.Checked)}
		if res.Safety.Checked == 0 {
			row[3] = unmeasured
		}
		exclusion := res.Safety.Violations
		fence := []string{unmeasured, unmeasured, unmeasured, unmeasured, unmeasured}
		if f := res.Safety.Fence; f != nil {
			exclusion -= f.Stale - f.Rejected
			mode := "off"
			if f.Fenced {
				mode = "on"
			}
			fence = []string{mode, fmt.Sprint(f.Writes), fmt.Sprint(f.Stale), fmt.Sprint(f.Stale - f.Rejected), fmt.Sprint(f.Rejected)}
		}
		row = append(row, violations(res))
		if res.Safety.Fence != nil && res.Safety.Checked > 0 {
			row[len(row)-1] = fmt.Sprintf("%d (exclusion %d)", res.Safety.Violations, exclusion)
		}
		row = append(row, fence...)
		var faults, sessions []string
		for _, k := range sortedKeys(res.Faults) {
			if what, ok := strings.CutPrefix(k, "session."); ok {
				sessions = append(sessions, fmt.Sprintf("%s %d", what, res.Faults[k]))
			} else {
				faults = append(faults, fmt.Sprintf("%s %d", k, res.Faults[k]))
			}
		}
		row = append(row, orNone(faults, res.Faults != nil), orNone(sessions, res.Faults != nil))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("analysis: write safety: %w", err)
	}
	return nil
}

func orNone(items []string, measured bool) string {
	switch {
	case !measured:
		return unmeasured
	case len(items) == 0:
		return "none"
	}
	return strings.Join(items, ", ")
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
