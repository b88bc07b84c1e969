package analysis

// The columns of a run's summary table, declared once for every format:
// the text table shows each column's heading and cell, the narrow (default)
// one only the columns a reader compares first; csv and json show each
// column's fields, named in snake_case with their unit, values as numbers
// in that unit (nil where not measured).

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// unmeasured is what the summary prints for a figure nobody measured: never
// a zero that a reader could take for a measurement.
const unmeasured = "-"

// column is one column of the summary table.
type column struct {
	// head is the text and markdown heading: its name and unit.
	head string
	// cell is the text and markdown cell of a result: unmeasured where
	// not measured.
	cell func(*results.Result) string
	// fields are the csv and json columns it is (a pair of sides is two).
	fields []field
	// narrow, wide: the default table, and the --wide and markdown ones,
	// show it.
	narrow, wide bool
}

// field is one csv column and json key.
type field struct {
	name  string
	value func(*results.Result) any // nil: not measured
}

// summaryColumns are the columns of run's table, in order. The backend is
// narrow only for a run of several backends, the repeat only shown for a
// run of several repeats (its fields are always there).
func summaryColumns(run *results.Run) []column {
	latName := "latency"
	for i := range run.Results {
		if name, _ := results.PrimaryLatency(&run.Results[i]); name != "" {
			latName = string(name)
			break
		}
	}
	repeats := run.Config.Repeat > 1
	machine := slices.ContainsFunc(run.Results, func(r results.Result) bool { return r.Load != nil && r.Load.Machine != nil })
	backends := Distinct(Cases([]*results.Run{run}), func(c *Case) string { return string(c.Backend) })
	return []column{
		{head: "backend", cell: func(r *results.Result) string { return string(r.Backend) },
			fields: []field{{"backend", func(r *results.Result) any { return string(r.Backend) }}},
			narrow: len(backends) > 1, wide: true},
		{head: "variant", cell: func(r *results.Result) string { return r.Variant },
			fields: []field{{"variant", func(r *results.Result) any { return r.Variant }},
				{"class", func(r *results.Result) any { return string(r.ClassOf()) }}},
			narrow: true, wide: true},
		{head: "clients", cell: func(r *results.Result) string { return fmt.Sprint(r.Clients) },
			fields: []field{{"clients", func(r *results.Result) any { return r.Clients }}},
			narrow: true, wide: true},
		{head: "rep", cell: func(r *results.Result) string { return fmt.Sprint(r.Repeat) },
			fields: []field{{"repeat", func(r *results.Result) any { return r.Repeat }}},
			narrow: repeats, wide: repeats},
		{head: "ops", cell: func(r *results.Result) string { return fmt.Sprint(r.Ops.Succeeded) },
			fields: []field{{"ops", func(r *results.Result) any { return r.Ops.Succeeded }}},
			wide:   true},
		{head: "ops/s", cell: formatRate,
			fields: []field{{"ops_per_s", func(r *results.Result) any {
				if r.Elapsed <= 0 {
					return nil
				}
				return r.Throughput
			}}},
			narrow: true, wide: true},
		latencyColumn(latName+" p50", 50, true, field{"latency", func(r *results.Result) any {
			if name, _ := results.PrimaryLatency(r); name != "" {
				return string(name)
			}
			return nil
		}}),
		latencyColumn("p99", 99, true),
		latencyColumn("p99.9", 99.9, false),
		pairColumn("notif/op cli|srv", figures.WatchEvents, figures.ServerWatchEvents, true),
		{head: "wasted/op", cell: func(r *results.Result) string { return perOpCell(r, figures.WastedWakeups.Key) },
			fields: []field{perOpField(figures.WastedWakeups)}, wide: true},
		pairColumn("req/op cli|srv", figures.Requests, figures.ServerRequests, true),
		pairColumn("B/op rx cli|srv tx", figures.BytesReceived, figures.ServerBytesSent, false),
		{head: "FIFO inv", cell: fifo,
			fields: []field{{"fifo_inversions", func(r *results.Result) any {
				if r.Fairness.Jain == 0 {
					return nil
				}
				return r.Fairness.FIFOInversions
			}}}, wide: true},
		{head: "Jain", cell: jain,
			fields: []field{{"jain", func(r *results.Result) any {
				if j, ok := jainMeaningful(r); ok {
					return j
				}
				return nil
			}}}, wide: true},
		{head: "violations", cell: violations,
			fields: []field{{"violations", func(r *results.Result) any {
				if r.Safety.Checked == 0 {
					return nil
				}
				return r.Safety.Violations
			}}}, wide: true},
		{head: "errors", cell: func(r *results.Result) string { return fmt.Sprint(realErrors(r)) },
			fields: []field{{"errors", func(r *results.Result) any { return realErrors(r) }}}, wide: true},
		{head: "waiting at end", cell: func(r *results.Result) string { return fmt.Sprint(r.Ops.StillWaiting) },
			fields: []field{{"still_waiting", func(r *results.Result) any { return r.Ops.StillWaiting }}}, wide: true},
		{head: "client cpu", cell: ClientCPU,
			fields: []field{{"client_cpu_share", func(r *results.Result) any {
				if r.Load == nil || r.Load.Cores == 0 || r.Load.CPUNotMeasured {
					return nil
				}
				return r.Load.CPUFraction
			}}}, wide: true},
		{head: "others cpu", cell: OthersCPU,
			fields: []field{{"others_cpu_share", func(r *results.Result) any {
				if r.Load == nil || r.Load.Machine == nil {
					return nil
				}
				return r.Load.Machine.OthersShare()
			}}}, wide: machine},
		{head: "client-bound", cell: ClientBoundCell,
			fields: []field{{"client_bound", func(r *results.Result) any {
				if r.Load == nil && r.ClientBound == nil {
					return nil
				}
				return ClientBoundCell(r)
			}}}, wide: true},
		{head: "sessions lost", cell: sessionsLost,
			fields: []field{{"sessions_lost", func(r *results.Result) any {
				if r.Load == nil && r.SessionsLost == 0 {
					return nil
				}
				return r.SessionsLost
			}}}, narrow: true, wide: true},
		{head: "stopped by", cell: func(r *results.Result) string { return string(r.StoppedBy) },
			fields: []field{{"stopped_by", func(r *results.Result) any { return string(r.StoppedBy) }}}, wide: true},
		{head: "flags", cell: flags, narrow: true},
	}
}

// latencyColumn is percentile q of a result's primary latency: a duration
// in text, milliseconds in csv and json; extra fields come first.
func latencyColumn(head string, q float64, narrow bool, extra ...field) column {
	name := "p" + strings.ReplaceAll(fmt.Sprint(q), ".", "") + "_ms"
	return column{head: head,
		cell: func(r *results.Result) string {
			_, h := results.PrimaryLatency(r)
			return quantile(h, q)
		},
		fields: append(extra, field{name, func(r *results.Result) any {
			_, h := results.PrimaryLatency(r)
			if d, ok := quantileOf(h, q); ok {
				return Millis(d)
			}
			return nil
		}}),
		narrow: narrow, wide: true}
}

// pairColumn is a client figure and a server one side by side, "cli | srv"
// in text, two fields in csv and json.
func pairColumn(head string, client, server figures.Figure, narrow bool) column {
	return column{head: head,
		cell: func(r *results.Result) string {
			return perOpCell(r, client.Key) + " | " + perOpCell(r, server.Key)
		},
		fields: []field{perOpField(client), perOpField(server)},
		narrow: narrow, wide: true}
}

// perOpField is a per-operation figure: "watch_events_per_op".
func perOpField(f figures.Figure) field {
	return field{f.Key + "_per_op", func(r *results.Result) any {
		if v, ok := ResultPerOp(r, f.Key); ok {
			return v
		}
		return nil
	}}
}

func formatRate(res *results.Result) string {
	if res.Elapsed <= 0 {
		return unmeasured
	}
	return formatFloat(res.Throughput)
}

// quantileOf is percentile q of h, false where h recorded nothing.
func quantileOf(h *results.Histogram, q float64) (time.Duration, bool) {
	if h == nil || h.Count == 0 {
		return 0, false
	}
	switch q {
	case 50:
		return time.Duration(h.P50), true
	case 99:
		return time.Duration(h.P99), true
	case 99.9:
		return time.Duration(h.P999), true
	}
	d, err := h.Quantile(q)
	return d, err == nil
}

func quantile(h *results.Histogram, q float64) string {
	d, ok := quantileOf(h, q)
	if !ok {
		return unmeasured
	}
	return results.FormatDuration(d)
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

// OthersCPU is what processes other than zkbench, its servers and the
// kernel took of the machine's cores beside the case, "3%", or "-" where
// the machine was not measured (results.Machine); "62% loaded" past the
// loaded-machine rule's bound.
func OthersCPU(res *results.Result) string {
	if res.Load == nil || res.Load.Machine == nil {
		return unmeasured
	}
	s := fmt.Sprintf("%.0f%%", 100*res.Load.Machine.OthersShare())
	if res.Loaded != nil {
		s += " loaded"
	}
	return s
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

// sessionsLost is "-" for a result from before the load generator (and
// the sessions it lost) was measured, unless it counted some.
func sessionsLost(res *results.Result) string {
	if res.Load == nil && res.SessionsLost == 0 {
		return unmeasured
	}
	return fmt.Sprint(res.SessionsLost)
}

// flags are the narrow table's words for a case to look at twice: the
// load generator was its limit, its safety checks failed, it had errors,
// it ended early, its server counts are partial. The wide table has a
// column for each; the findings and notes say more.
func flags(res *results.Result) string {
	var out []string
	if res.ClientBound != nil {
		out = append(out, "client-bound")
	}
	if res.Loaded != nil {
		out = append(out, "loaded")
	}
	if res.Safety.Violations > 0 {
		out = append(out, "UNSAFE")
	}
	if realErrors(res) > 0 {
		out = append(out, "errors")
	}
	switch res.StoppedBy {
	case results.StoppedByError:
		out = append(out, "stopped by error")
	case results.StoppedByInterrupted:
		out = append(out, "interrupted")
	}
	if res.ServerPartial {
		out = append(out, "server partial")
	}
	// No space after the commas: the narrow table stays within
	// SummaryWidth with three flags.
	return strings.Join(out, ",")
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
