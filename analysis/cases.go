// Package analysis is the one model over results files that every renderer
// reads: it groups the results of one or more runs into cases (one
// workload, backend, variant and client count, over every repeat) and reads
// each case's figures as package figures declares them (cases.go); it fits
// how each figure grows with clients and answers capacity questions
// (fit.go, plan.go, usl.go; a lock workload's waits and load predicted by
// a queue simulated from measured handoffs: queue.go, predict.go); it compares two runs figure by figure (compare.go);
// and it prints the terminal summary of one run (runsummary.go). Plots, the
// report and the commands print what it computes, so that all of them print
// the same number for the same thing.
package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// Key identifies a case across runs. Class is the variant's herd class as
// its results record it (a function of the workload and the variant).
// Setting says what the case's run was set to do where runs of its
// workload given together were set apart (Keyer): empty for one run, or
// runs set alike, so that only like cases pool as repeats.
type Key struct {
	Workload string        `json:"workload"`
	Backend  backends.Kind `json:"backend"`
	Variant  string        `json:"variant"`
	Class    figures.Class `json:"class,omitempty"`
	Clients  int           `json:"clients"`
	Setting  string        `json:"setting,omitempty"`
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s/N=%d", k.Workload, k.Backend, k.VariantLabel(), k.Clients)
}

// VariantLabel is the variant, followed by the setting in parentheses
// where the case has one: the name a table or a plot gives the case.
func (k Key) VariantLabel() string { return k.Series().VariantLabel() }

// Series names one line of a sweep: a case key without its client count.
type Series struct {
	Workload string
	Backend  backends.Kind
	Variant  string
	Class    figures.Class
	Setting  string `json:",omitempty"`
}

// VariantLabel is the series' variant and setting, as Key.VariantLabel.
func (s Series) VariantLabel() string {
	if s.Setting == "" {
		return s.Variant
	}
	return s.Variant + " (" + s.Setting + ")"
}

// Series returns k without its client count.
func (k Key) Series() Series { return Series{k.Workload, k.Backend, k.Variant, k.Class, k.Setting} }

// Key returns the key of s at clients.
func (s Series) Key(clients int) Key {
	return Key{Workload: s.Workload, Backend: s.Backend, Variant: s.Variant, Class: s.Class, Clients: clients, Setting: s.Setting}
}

// KeyOf is the key of result r alone (no setting: see Keyer for runs
// given together).
func KeyOf(r *results.Result) Key {
	return Key{Workload: r.Workload, Backend: r.Backend, Variant: r.Variant, Class: r.ClassOf(), Clients: r.Clients}
}

// Keyer gives the results of runs given together their case keys. Two
// runs' results of one workload, backend, variant and client count are
// repeats of one case only if the runs were set alike: the same open-loop
// rate, hold, think time and parameters (the cluster, the watched node's
// size, the churn, a timeout; not a case's bounds). Where runs of a
// workload differ in any of these, and some case stands in more than one
// of them, every case of that workload carries the values its run had of
// the settings that differ (Key.Setting: "size=65536"): a 1 KB and a 64 KB
// sweep, or a closed-loop sweep and an open-loop run, are not averaged.
type Keyer struct {
	setting map[*results.Run]string // Key.Setting of each run's cases
}

// boundParams are parameters that bound a case rather than set what it
// measures: runs that differ only in them still pool.
var boundParams = map[string]bool{"step_timeout": true, "failovers": true, "rounds": true}

// settingsOf is what run was set to do, by name.
func settingsOf(run *results.Run) map[string]string {
	rate := "closed loop"
	if run.Config.Rate > 0 {
		rate = strconv.FormatFloat(run.Config.Rate, 'g', -1, 64) + "/s"
	}
	s := map[string]string{"rate": rate, "hold": run.Config.Hold.String(), "think": run.Config.Think.String()}
	for k, v := range run.Config.Params {
		if !boundParams[k] {
			s[k] = v
		}
	}
	return s
}

// settingOrder puts the loop's settings first, then parameters by name.
func settingOrder(a, b string) int {
	rank := func(s string) int { return slices.Index([]string{"think", "hold", "rate"}, s) } // -1 for a parameter
	return cmp.Or(cmp.Compare(rank(b), rank(a)), cmp.Compare(a, b))
}

// NewKeyer reads which settings the runs of each workload differ in,
// counting a workload's runs only where one of its cases stands in two of
// them set apart.
func NewKeyer(runs []*results.Run) *Keyer {
	type series struct {
		workload string
		backend  backends.Kind
		variant  string
		clients  int
	}
	settings := map[*results.Run]map[string]string{}
	holders := map[series][]map[string]string{}
	for _, run := range runs {
		set := settingsOf(run)
		settings[run] = set
		for _, r := range run.Results {
			k := series{r.Workload, r.Backend, r.Variant, r.Clients}
			holders[k] = append(holders[k], set)
		}
	}
	differ := map[string]map[string]bool{}
	for k, sets := range holders {
		for _, a := range sets[1:] {
			for name := range unionKeys(sets[0], a) {
				if valueOf(sets[0], name) != valueOf(a, name) {
					if differ[k.workload] == nil {
						differ[k.workload] = map[string]bool{}
					}
					differ[k.workload][name] = true
				}
			}
		}
	}
	kr := &Keyer{setting: map[*results.Run]string{}}
	for _, run := range runs {
		if len(run.Results) == 0 {
			continue
		}
		// A run's results are of one workload.
		if names := differ[run.Results[0].Workload]; len(names) > 0 {
			kr.setting[run] = settingText(settings[run], slices.SortedFunc(maps.Keys(names), settingOrder))
		}
	}
	return kr
}

func unionKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func valueOf(set map[string]string, name string) string {
	if v, ok := set[name]; ok {
		return v
	}
	return "unset"
}

// Key is the key of result r of run, one of the runs given to NewKeyer.
func (kr *Keyer) Key(run *results.Run, r *results.Result) Key {
	k := KeyOf(r)
	k.Setting = kr.setting[run]
	return k
}

// settingText says a run's values of the named settings:
// "open loop 20/s, hold 50ms, size=65536".
func settingText(set map[string]string, names []string) string {
	parts := make([]string, len(names))
	for i, name := range names {
		switch v := valueOf(set, name); name {
		case "rate":
			parts[i] = v // "closed loop" or "10/s"
			if v != "closed loop" {
				parts[i] = "open loop " + v
			}
		case "hold", "think":
			parts[i] = name + " " + v
		default:
			parts[i] = name + "=" + v
		}
	}
	return strings.Join(parts, ", ")
}

// Case is every result of one Key: the repeats of one run, and results of
// the same key from other runs given together and set alike, which count
// as more repeats.
type Case struct {
	Key
	// Results in input order (run order, then file order).
	Results []*results.Result
	merged  map[figures.Latency]*hdrhistogram.Histogram
}

// Cases groups the results of runs by Key (as the Keyer of runs gives
// it), sorted by workload, backend, variant (naive first, then herd-free,
// then baselines, then the rest by name), setting and client count.
func Cases(runs []*results.Run) []*Case {
	keyer := NewKeyer(runs)
	byKey := map[Key]*Case{}
	var out []*Case
	for _, run := range runs {
		for i := range run.Results {
			r := &run.Results[i]
			k := keyer.Key(run, r)
			c := byKey[k]
			if c == nil {
				c = &Case{Key: k}
				byKey[k] = c
				out = append(out, c)
			}
			c.Results = append(c.Results, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *Case) int { return CompareKeys(a.Key, b.Key) })
	return out
}

// CompareKeys orders keys as Cases does.
func CompareKeys(a, b Key) int {
	return cmp.Or(
		cmp.Compare(a.Workload, b.Workload),
		cmp.Compare(a.Backend, b.Backend),
		CompareVariants(a.Class, a.Variant, b.Class, b.Variant),
		compareSettings(a.Setting, b.Setting),
		cmp.Compare(a.Clients, b.Clients),
	)
}

// compareSettings orders settings as text, but a run of digits by its
// number: "size=1024" before "size=65536", "open loop 2/s" before "open
// loop 10/s".
func compareSettings(a, b string) int {
	for a != "" && b != "" {
		da, db := digitsAt(a), digitsAt(b)
		if da > 0 && db > 0 {
			x, _ := strconv.ParseFloat(a[:da], 64)
			y, _ := strconv.ParseFloat(b[:db], 64)
			if c := cmp.Compare(x, y); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitsAt is the length of the run of digits s begins with.
func digitsAt(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// CompareVariants orders naive variants first, then herd-free ones, then
// baselines, then any other, by name within a class.
func CompareVariants(ac figures.Class, a string, bc figures.Class, b string) int {
	return cmp.Or(cmp.Compare(ac.Rank(), bc.Rank()), cmp.Compare(a, b))
}

// Group returns the cases of each series, in the order of cases.
func Group(cases []*Case) (order []Series, bySeries map[Series][]*Case) {
	bySeries = map[Series][]*Case{}
	for _, c := range cases {
		s := c.Key.Series()
		if _, ok := bySeries[s]; !ok {
			order = append(order, s)
		}
		bySeries[s] = append(bySeries[s], c)
	}
	return order, bySeries
}

// Distinct returns the distinct values of f over cases in first-seen order.
func Distinct[T comparable](cases []*Case, f func(*Case) T) []T {
	seen := map[T]bool{}
	var out []T
	for _, c := range cases {
		v := f(c)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// mean averages f over the repeats that measured it.
func (c *Case) mean(f func(*results.Result) (float64, bool)) (float64, bool) {
	var sum float64
	var n int
	for _, r := range c.Results {
		if v, ok := f(r); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// Mean averages f over the repeats that measured it (false when none did).
func (c *Case) Mean(f func(*results.Result) (float64, bool)) (float64, bool) { return c.mean(f) }

// Repeats is the number of results in the case.
func (c *Case) Repeats() int { return len(c.Results) }

// Succeeded sums successful operations over repeats.
func (c *Case) Succeeded() int64 {
	var n int64
	for _, r := range c.Results {
		n += r.Ops.Succeeded
	}
	return n
}

// Throughput is the mean over repeats of successful operations per second.
// False when no repeat measured an interval.
func (c *Case) Throughput() (float64, bool) {
	return c.mean(func(r *results.Result) (float64, bool) {
		return r.Throughput, r.Elapsed > 0
	})
}

// PerOp is the mean over repeats of the per-operation figure key (see
// ResultPerOp). False when no repeat measured it.
func (c *Case) PerOp(key string) (float64, bool) {
	return c.mean(func(r *results.Result) (float64, bool) { return ResultPerOp(r, key) })
}

// ResultPerOp reads the per-operation figure key of one result (see
// results.Result.PerOp and package figures): its PerOp entry, or, for a
// server figure missing there, the server counter's delta per successful
// operation when that was scraped. A partial server count
// (results.Result.ServerPartial) is never divided per operation.
func ResultPerOp(r *results.Result, key string) (float64, bool) {
	if v, ok := r.PerOp[key]; ok {
		return v, true
	}
	f, ok := figures.ByKey(key)
	if !ok || f.Metric == "" {
		return 0, false
	}
	return serverPerOp(r, f.Metric)
}

// serverPerOp is the server counter metric's delta per successful
// operation of r, where it was scraped and the count is not partial.
func serverPerOp(r *results.Result, metric string) (float64, bool) {
	if r.ServerPartial || r.Ops.Succeeded <= 0 {
		return 0, false
	}
	v, ok := r.Server[metric]
	return v / float64(r.Ops.Succeeded), ok
}

// Unit is the case's unit operation, as its workload declares it (and its
// results record).
func (c *Case) Unit() figures.Unit {
	if len(c.Results) == 0 {
		return figures.Operation
	}
	return c.Results[0].UnitOf()
}

// Value reads figure f of the case: the mean over repeats of a rate or a
// per-operation count, or a percentile of the latency histogram merged over
// repeats (f.Latency, or the case's primary latency when f names none), in
// milliseconds. False when the case did not measure it.
func (c *Case) Value(f figures.Figure) (float64, bool, error) {
	switch f.Kind {
	case figures.Rate:
		v, ok := c.Throughput()
		return v, ok, nil
	case figures.Quantile:
		name := f.Latency
		if name == "" {
			name = c.PrimaryLatency()
		}
		d, ok, err := c.Quantile(name, f.Q)
		return Millis(d), ok, err
	}
	v, ok := c.PerOp(f.Key)
	return v, ok, nil
}

// TableFigures lists the figures of a summary table over cases whose latency
// histograms are latencies: throughput, p50, p99 and p99.9 of each latency,
// then the per-operation counts tables show.
func TableFigures(latencies []figures.Latency) []figures.Figure {
	out := []figures.Figure{figures.Throughput}
	for _, n := range latencies {
		for _, q := range figures.Latencies() {
			out = append(out, q.ForLatency(n))
		}
	}
	return append(out, figures.Counts()...)
}

// ServerRate is the mean over repeats of a server counter's delta per second
// of the measured interval (e.g. backends.MetricWrites: writes per second).
func (c *Case) ServerRate(metric string) (float64, bool) {
	return c.mean(func(r *results.Result) (float64, bool) {
		v, ok := r.Server[metric]
		if !ok || r.Elapsed <= 0 {
			return 0, false
		}
		return v / r.Elapsed.Seconds(), true
	})
}

// RequestTypes lists the request types with a "requests.<type>" figure in
// any repeat, sorted.
func (c *Case) RequestTypes() []string {
	var out []string
	for _, r := range c.Results {
		for k := range r.PerOp {
			if t, ok := figures.RequestType(k); ok && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// LatencyNames lists the case's latency histograms in the order its
// workload declares them (the primary one first), then any others by name.
func (c *Case) LatencyNames() []figures.Latency {
	var out []figures.Latency
	for _, r := range c.Results {
		for _, k := range r.LatencyNames() {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	if len(c.Results) > 0 {
		c.Results[0].SortLatencies(out)
	}
	return out
}

// PrimaryLatency is the latency that stands for a case in summaries and
// capacity planning: the first of LatencyNames, "" if none.
func (c *Case) PrimaryLatency() figures.Latency {
	if n := c.LatencyNames(); len(n) > 0 {
		return n[0]
	}
	return ""
}

// Latency returns the histogram name merged over every repeat; nil if no
// repeat recorded it. The merge is computed once.
func (c *Case) Latency(name figures.Latency) (*hdrhistogram.Histogram, error) {
	if h, ok := c.merged[name]; ok {
		return h, nil
	}
	var merged *hdrhistogram.Histogram
	for _, r := range c.Results {
		hs := r.Latency[name]
		if hs == nil {
			continue
		}
		h, err := hs.Decode()
		if err != nil {
			return nil, fmt.Errorf("analysis: %s latency %q: %w", c.Key, name, err)
		}
		if merged == nil {
			merged = results.NewRecorder()
		}
		merged.Merge(h)
	}
	if c.merged == nil {
		c.merged = map[figures.Latency]*hdrhistogram.Histogram{}
	}
	c.merged[name] = merged
	return merged, nil
}

// Quantile returns the latency at percentile q (0 to 100) of histogram name
// merged over repeats; false if not recorded or empty.
func (c *Case) Quantile(name figures.Latency, q float64) (time.Duration, bool, error) {
	h, err := c.Latency(name)
	if err != nil || h == nil || h.TotalCount() == 0 {
		return 0, false, err
	}
	return time.Duration(h.ValueAtQuantile(q)), true, nil
}

// Millis converts d to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Notes are r's notes as a reader sees them: a client|server disagreement
// that a results file from before the documented causes were declared
// records bare gets its cause (figures.Explain), read from the client and
// server counts the file holds.
func Notes(r *results.Result) []string {
	out := make([]string, len(r.Notes))
	totals := figures.Totals{WatchEvents: r.Client.WatchEvents, LateWatchEvents: r.Client.LateWatchEvents, Requests: r.Client.Requests,
		Witness: r.Client.Witness, InFlight: r.Client.InFlight}
	for i, n := range r.Notes {
		out[i] = figures.Explain(n, r.Backend, totals, r.Server)
	}
	if n := JainUnmeaningful(r); n != "" {
		out = append(out, n)
	}
	return out
}
