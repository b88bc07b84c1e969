package analysis

// A comparison says what changed between two runs, figure by figure, for
// every case (workload, backend, variant, clients) the two have in common:
// throughput, latency percentiles, watch events and requests per operation,
// client side and server side, with the ratio B/A.

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkbench/zkbench/results"
)

// FigureChange is one figure of one case in both runs.
type FigureChange struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Unit  string `json:"unit"`
	// A and B are the values; HasA and HasB say whether each run measured it.
	A    float64 `json:"a"`
	B    float64 `json:"b"`
	HasA bool    `json:"has_a"`
	HasB bool    `json:"has_b"`
}

// Ratio is B/A; false when either is missing or A is zero.
func (r FigureChange) Ratio() (float64, bool) {
	if !r.HasA || !r.HasB || r.A == 0 {
		return 0, false
	}
	return r.B / r.A, true
}

// CaseChange is the comparison of one case present in both runs.
type CaseChange struct {
	Key
	Rows []FigureChange `json:"rows"`
	// BoundA and BoundB are the case's client-bound reasons in A and B,
	// or, for a case that was not client-bound but ran on a loaded
	// machine, "loaded machine: " and its detail ("" when neither, or not
	// measured): a change where either is set may be the load generator's
	// or the other processes', not the servers'.
	BoundA string `json:"client_bound_a,omitempty"`
	BoundB string `json:"client_bound_b,omitempty"`
}

// Comparison is what changed from A to B.
type Comparison struct {
	A, B *results.Run `json:"-"`
	// Cases present in both runs, in summary order.
	Cases []CaseChange `json:"cases"`
	// OnlyA and OnlyB are cases one run has and the other does not.
	OnlyA []Key `json:"only_a,omitempty"`
	OnlyB []Key `json:"only_b,omitempty"`
	// Setup lists configuration differences that make the comparison less
	// than like for like.
	Setup []string `json:"setup,omitempty"`
}

// Compare matches the cases of a and b and reads every summary figure of
// each (every latency histogram either run recorded, at p50, p99, p99.9).
// Cases match on workload, backend, variant and clients. When nothing
// matches because the runs used different backends (a ZooKeeper run against
// an etcd run), cases match without the backend, and Setup says so.
func Compare(a, b *results.Run) (*Comparison, error) {
	c := &Comparison{A: a, B: b, Setup: setupDiff(a, b)}
	ca, cb := Cases([]*results.Run{a}), Cases([]*results.Run{b})
	match := func(k Key) Key { return k }
	if !overlap(ca, cb, match) {
		noBackend := func(k Key) Key { k.Backend = ""; return k }
		if overlap(ca, cb, noBackend) {
			match = noBackend
			c.Setup = append(c.Setup, "no case ran on the same backend in both runs: cases are matched across backends")
		}
	}
	byKey := map[Key]*Case{}
	for _, y := range cb {
		byKey[match(y.Key)] = y
	}
	inA := map[Key]bool{}
	for _, x := range ca {
		inA[match(x.Key)] = true
		y, ok := byKey[match(x.Key)]
		if !ok {
			c.OnlyA = append(c.OnlyA, x.Key)
			continue
		}
		cs, err := compareCase(x, y)
		if err != nil {
			return nil, err
		}
		c.Cases = append(c.Cases, cs)
	}
	for _, y := range cb {
		if !inA[match(y.Key)] {
			c.OnlyB = append(c.OnlyB, y.Key)
		}
	}
	return c, nil
}

func overlap(a, b []*Case, match func(Key) Key) bool {
	keys := map[Key]bool{}
	for _, x := range a {
		keys[match(x.Key)] = true
	}
	return slices.ContainsFunc(b, func(y *Case) bool { return keys[match(y.Key)] })
}

// compareCase reads every figure of x (from A) and y (from B): throughput,
// then each latency either recorded at p50, p99 and p99.9, then the
// per-operation counts.
func compareCase(x, y *Case) (CaseChange, error) {
	names := x.LatencyNames()
	for _, n := range y.LatencyNames() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(x.Results) > 0 {
		x.Results[0].SortLatencies(names)
	}
	figs := TableFigures(names)
	cs := CaseChange{Key: x.Key}
	if cb := x.ClientBound(); cb != nil {
		cs.BoundA = cb.Detail
	}
	if cb := y.ClientBound(); cb != nil {
		cs.BoundB = cb.Detail
	}
	if x.ClientBound() == nil && x.Loaded() != nil {
		cs.BoundA = loadedPrefix + x.Loaded().Detail
	}
	if y.ClientBound() == nil && y.Loaded() != nil {
		cs.BoundB = loadedPrefix + y.Loaded().Detail
	}
	if x.Backend != y.Backend {
		cs.Backend = x.Backend + " vs " + y.Backend
	}
	for _, f := range figs {
		row := FigureChange{ID: f.ID(), Label: f.Label, Unit: f.Unit(x.Unit())}
		var err error
		if row.A, row.HasA, err = x.Value(f); err != nil {
			return cs, err
		}
		if row.B, row.HasB, err = y.Value(f); err != nil {
			return cs, err
		}
		if row.HasA || row.HasB {
			cs.Rows = append(cs.Rows, row)
		}
	}
	return cs, nil
}

// setupDiff lists what the two runs were configured to do differently.
func setupDiff(a, b *results.Run) []string {
	var out []string
	diff := func(what string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			out = append(out, fmt.Sprintf("%s: %v in A, %v in B", what, x, y))
		}
	}
	diff("tool", a.Tool, b.Tool)
	diff("workload", a.Config.Workload, b.Config.Workload)
	diff("backend", a.Config.Backend, b.Config.Backend)
	diff("cluster mode", a.ClusterMode, b.ClusterMode)
	diff("cluster members", len(a.Cluster.Members), len(b.Cluster.Members))
	diff("duration bound", a.Config.Duration, b.Config.Duration)
	diff("ops bound", a.Config.Ops, b.Config.Ops)
	diff("warm-up", a.Config.Warmup, b.Config.Warmup)
	diff("rate (open loop)", a.Config.Rate, b.Config.Rate)
	diff("hold", a.Config.Hold, b.Config.Hold)
	diff("think", a.Config.Think, b.Config.Think)
	// Each parameter apart (one a run has not: unset), but for the cluster
	// mode and size, said above as they ran.
	keys := slices.Collect(maps.Keys(a.Config.Params))
	for k := range b.Config.Params {
		if _, ok := a.Config.Params[k]; !ok {
			keys = append(keys, k)
		}
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "cluster" || k == "nodes" })
	slices.Sort(keys)
	param := func(r *results.Run, k string) string {
		if v, ok := r.Config.Params[k]; ok {
			return v
		}
		return "unset"
	}
	for _, k := range keys {
		diff("param "+k, param(a, k), param(b, k))
	}
	diff("client host", a.Environment.Hostname, b.Environment.Hostname)
	diff("client CPUs", a.Environment.CPUs, b.Environment.CPUs)
	for _, r := range []*results.Run{a, b} {
		if r.Status != results.StatusComplete {
			out = append(out, fmt.Sprintf("run %s is %s: %s", r.ID, r.Status, r.StatusDetail))
		}
	}
	return out
}

// Threshold marks a change as notable in the text output: |B/A - 1| at
// least this.
const Threshold = 0.10

// Write prints the comparison as text: setup differences, then each case's
// figures with A, B, B/A and the change in percent (marked "*" at or
// beyond Threshold), then the cases only one run has.
func (c *Comparison) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s\nB: %s\n", describe(c.A), describe(c.B))
	if len(c.Setup) > 0 {
		b.WriteString("\nNot like for like:\n")
		for _, s := range c.Setup {
			fmt.Fprintf(&b, "  - %s\n", s)
		}
	}
	fmt.Fprintf(&b, "\n%d case(s) in both runs; %d only in A; %d only in B. Ratios are B/A; * marks a change of %s%% or more.\n",
		len(c.Cases), len(c.OnlyA), len(c.OnlyB), strconv.Itoa(int(Threshold*100)))
	for _, cs := range c.Cases {
		fmt.Fprintf(&b, "\n%s / %s / %s / %d clients\n", cs.Workload, cs.Backend, cs.Variant, cs.Clients)
		for _, x := range []struct{ run, why string }{{"A", cs.BoundA}, {"B", cs.BoundB}} {
			if x.why == "" {
				continue
			}
			label, why := "CLIENT-BOUND", x.why
			if w, ok := strings.CutPrefix(why, loadedPrefix); ok {
				label, why = "LOADED MACHINE", w
			}
			fmt.Fprintf(&b, "  %s in %s: %s\n", label, x.run, why)
		}
		table := [][]string{{"figure", "unit", "A", "B", "B/A", "change", ""}}
		for _, r := range cs.Rows {
			ratio, change, mark := "", "", ""
			if q, ok := r.Ratio(); ok {
				ratio = fmtNum(q)
				change = fmt.Sprintf("%+.1f%%", 100*(q-1))
				if math.Abs(q-1) >= Threshold {
					mark = "*"
				}
			} else if r.HasA && r.HasB && r.A == 0 && r.B == 0 {
				ratio, change = "=", "0%"
			} else if r.HasA && r.HasB {
				ratio, change, mark = "∞", "from 0", "*"
			}
			table = append(table, []string{r.Label, r.Unit, value(r.A, r.HasA), value(r.B, r.HasB), ratio, change, mark})
		}
		writeTable(&b, table)
	}
	for _, only := range []struct {
		name string
		keys []Key
	}{{"A", c.OnlyA}, {"B", c.OnlyB}} {
		if len(only.keys) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nOnly in %s:\n", only.name)
		for _, k := range only.keys {
			fmt.Fprintf(&b, "  %s / %s / %s / %d clients\n", k.Workload, k.Backend, k.Variant, k.Clients)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTable prints rows in columns: the first two (names) aligned left,
// the numbers aligned right.
func writeTable(b *strings.Builder, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		line.WriteString("  ")
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i < 2 {
				line.WriteString(c + pad + "  ")
			} else {
				line.WriteString(pad + c + "  ")
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

func describe(r *results.Run) string {
	return fmt.Sprintf("%s (%s on %s, %s, started %s)", r.ID, r.Config.Workload, r.Config.Backend, r.Status,
		r.StartedAt.UTC().Format(time.DateTime))
}

func value(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	return fmtNum(v)
}

// fmtNum prints 4 significant digits, without an exponent unless the
// value's magnitude is below 1e-4.
func fmtNum(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	if r != 0 && math.Abs(r) < 1e-4 {
		return strconv.FormatFloat(r, 'g', 4, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
