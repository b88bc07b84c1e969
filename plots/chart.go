// Package plots draws zkbench's charts from results files: the headline
// (<workload>-herd: notifications per operation, naive against herd-free),
// notification fan-out, throughput, latency percentiles and distributions,
// server requests per operation against clients, and throughput over time,
// with one panel per backend and a footer naming the runs, the zkbench
// that measured them and their servers.
//
// Drawing has two stages. Build extracts the data of every figure from the
// runs (the part golden-tested); Render draws one Chart with gonum/plot as
// PNG or SVG, laid out from the measured size of its text (layout.go) so
// that nothing is clipped. WriteAll does both into a folder.
package plots

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// Chart is one image: a grid of panels sharing axes, one legend.
type Chart struct {
	// Name is the file name without extension: "lock-fanout".
	Name string `json:"name"`
	// Title and Caption say what the figure shows and how to read it.
	Title   string `json:"title"`
	Caption string `json:"caption"`
	// Warning is drawn in red under the title: synthetic or partial input.
	Warning string `json:"warning,omitempty"`
	// Summary lines are drawn under the title: what the figure shows, in
	// words (the headline figure's herd at the largest client count).
	Summary []string `json:"summary,omitempty"`
	// Footer lines name where the data came from: each run's id, the
	// zkbench that measured it, its servers and the client machine.
	Footer []string `json:"footer,omitempty"`
	// Keys are legend-only entries that explain a style shared by many
	// lines (p50 solid, p99 dashed...).
	Keys []Line `json:"keys,omitempty"`
	// Panels in row-major order, Rows x Cols.
	Rows   int      `json:"rows"`
	Cols   int      `json:"cols"`
	Panels []*Panel `json:"panels"`
}

// Panel is one chart of a figure.
type Panel struct {
	Title string `json:"title"`
	X     Axis   `json:"x"`
	Y     Axis   `json:"y"`
	Lines []Line `json:"lines"`
	// Group: panels of a figure with the same Group share axis ranges.
	Group string `json:"group,omitempty"`
	// Notes say what was left out ("not measured", points a log scale
	// cannot show).
	Notes []string `json:"notes,omitempty"`
	// XGroup, when set, is the group whose panels share this panel's x
	// range, instead of Group (over-time panels share time, not y).
	XGroup string `json:"x_group,omitempty"`
	// Marks are injected faults drawn over the panel (over-time figures).
	Marks []Mark `json:"marks,omitempty"`
}

func (p *Panel) xGroup() string {
	if p.XGroup != "" {
		return p.XGroup
	}
	return p.Group
}

// Scales of an axis.
const (
	Linear = "linear"
	Log    = "log"
	// Nines is a percentile axis: x = -log10(1 - q), labelled "90%",
	// "99%", "99.9%"...
	Nines = "nines"
	// Category places the values of Ticks at equal steps (bar charts).
	Category = "category"
)

// Axis of a panel. Min and Max are shared by every panel of a figure.
type Axis struct {
	Label string  `json:"label"`
	Scale string  `json:"scale"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	// Ticks are labelled positions (measured client counts); empty means
	// the scale's own ticks.
	Ticks []float64 `json:"ticks,omitempty"`
	// Count axes hold whole numbers (sessions lost, events per interval):
	// they start at 0 and are labelled at whole numbers only.
	Count bool `json:"count,omitempty"`
}

// Line is one series of points, styled by what it is.
type Line struct {
	Label string `json:"label"`
	// Legend, when set, is the legend entry this line shares with others
	// (drawn solid); the figure's Keys explain the dashes.
	Legend string `json:"legend,omitempty"`
	// Variant is the line's variant, with its setting where runs drawn
	// together were set apart (analysis.Key.VariantLabel).
	Variant string        `json:"variant,omitempty"`
	Class   figures.Class `json:"class,omitempty"`
	Backend string        `json:"backend,omitempty"`
	// Color is "#rrggbb"; Dash 0 solid, 1 dashed, 2 dotted, 3 dash-dot;
	// Glyph "circle", "triangle", "square", "cross" or "" for none.
	Color string `json:"color"`
	Dash  int    `json:"dash"`
	Glyph string `json:"glyph,omitempty"`
	// Bar lines are drawn as bars stacked on the panel's earlier bars.
	Bar bool `json:"bar,omitempty"`
	// Scatter lines are drawn as their glyphs alone, unjoined.
	Scatter bool    `json:"scatter,omitempty"`
	Points  []Point `json:"points"`
}

// Point of a line.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Colours: the herd in red, the herd-free recipe in blue, baselines in grey;
// further variants take the palette in order.
var (
	classColor = map[figures.Class]string{
		figures.Naive:    "#d62728",
		figures.HerdFree: "#1f77b4",
		figures.Baseline: "#555555",
	}
	palette = []string{"#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"}
)

// style assigns colours to variants and request types, and glyphs to
// backends, once for all figures of a Build so that a variant looks the same
// everywhere.
type style struct {
	variant map[string]string
	reqType map[string]string
}

func newStyle(cases []*analysis.Case) *style {
	s := &style{variant: map[string]string{}, reqType: map[string]string{}}
	type classed struct {
		class figures.Class
		name  string
	}
	variants := analysis.Distinct(cases, func(c *analysis.Case) classed { return classed{c.Class, c.VariantLabel()} })
	slices.SortFunc(variants, func(a, b classed) int { return analysis.CompareVariants(a.class, a.name, b.class, b.name) })
	used := map[string]bool{}
	next := 0
	for _, v := range variants {
		if _, done := s.variant[v.name]; done {
			continue
		}
		if col, ok := classColor[v.class]; ok && !used[col] {
			s.variant[v.name] = col
			used[col] = true
			continue
		}
		s.variant[v.name] = palette[next%len(palette)]
		next++
	}
	types := requestTypes(cases)
	// Request types avoid the variants' red and blue until those run out.
	reqPalette := append(slices.Clone(palette), "#1f77b4", "#d62728")
	for i, t := range types {
		s.reqType[t] = reqPalette[i%len(reqPalette)]
	}
	return s
}

func glyphOf(b backends.Kind) string {
	switch b {
	case backends.ZooKeeper:
		return "circle"
	case backends.Etcd:
		return "triangle"
	}
	return "square"
}

func lineLabel(variant string, b backends.Kind, extra string) string {
	if extra != "" {
		return fmt.Sprintf("%s %s (%s)", variant, extra, b)
	}
	return fmt.Sprintf("%s (%s)", variant, b)
}

// Build extracts every figure the runs support, for each workload in them:
// fan-out, throughput, requests, latency percentiles and distribution for
// each latency histogram, and throughput over time. Results of the same
// workload, backend, variant and client count are merged as repeats (lines
// show the mean; histograms are merged).
func Build(runs []*results.Run) ([]*Chart, error) {
	cases := analysis.Cases(runs)
	st := newStyle(cases)
	runOf := map[*results.Result]*results.Run{}
	for _, r := range runs {
		for i := range r.Results {
			runOf[&r.Results[i]] = r
		}
	}
	var figs []*Chart
	for _, w := range analysis.Distinct(cases, func(c *analysis.Case) string { return c.Workload }) {
		wc := slices.DeleteFunc(slices.Clone(cases), func(c *analysis.Case) bool { return c.Workload != w })
		b := &builder{workload: w, unit: string(wc[0].Unit()), cases: wc, st: st, runOf: runOf, runs: runsOf(runs, w)}
		b.backends = analysis.Distinct(wc, func(c *analysis.Case) backends.Kind { return c.Backend })
		b.clients = analysis.Distinct(wc, func(c *analysis.Case) int { return c.Clients })
		slices.Sort(b.clients)
		b.order, b.series = analysis.Group(wc)
		first := len(figs)
		for _, f := range []func() (*Chart, error){b.herd, b.fanout, b.bytes, b.throughput, b.usl, b.requests, b.loadgen, b.handoffPath} {
			fig, err := f()
			if err != nil {
				return nil, err
			}
			if fig != nil {
				figs = append(figs, fig)
			}
		}
		for _, name := range latencyNames(wc) {
			for _, f := range []func(figures.Latency) (*Chart, error){b.percentiles, b.distribution} {
				fig, err := f(name)
				if err != nil {
					return nil, err
				}
				if fig != nil {
					figs = append(figs, fig)
				}
			}
		}
		if fig := b.timeline(); fig != nil {
			figs = append(figs, fig)
		}
		warning, footer := Warning(b.runs), footerOf(b.runs)
		for _, f := range figs[first:] {
			f.Warning, f.Footer = warning, footer
		}
	}
	for _, f := range figs {
		f.Name = safeName(f.Name)
		f.finish()
	}
	return figs, nil
}

// Warning says when the runs are synthetic test input or did not complete,
// "" otherwise.
func Warning(runs []*results.Run) string {
	var synthetic, partial []string
	for _, r := range runs {
		if strings.Contains(strings.ToUpper(r.Tool+" "+r.StatusDetail), "SYNTHETIC") {
			synthetic = append(synthetic, r.ID)
		} else if r.Status != results.StatusComplete {
			partial = append(partial, fmt.Sprintf("%s (%s)", r.ID, r.Status))
		}
	}
	list := func(ids []string) string {
		if len(ids) > 3 {
			return fmt.Sprintf("%s and %d more", strings.Join(ids[:3], ", "), len(ids)-3)
		}
		return strings.Join(ids, ", ")
	}
	var w []string
	if len(synthetic) > 0 {
		w = append(w, "SYNTHETIC TEST INPUT, not a measurement: "+list(synthetic))
	}
	if len(partial) > 0 {
		w = append(w, "partial results: "+list(partial))
	}
	return strings.Join(w, "; ")
}

// runsOf returns the runs with results of workload w.
func runsOf(runs []*results.Run, w string) []*results.Run {
	var out []*results.Run
	for _, r := range runs {
		if slices.ContainsFunc(r.Results, func(res results.Result) bool { return res.Workload == w }) {
			out = append(out, r)
		}
	}
	return out
}

// union is every value that of gives for one of the cases, once, in the
// order first given.
func union[T comparable](cases []*analysis.Case, of func(*analysis.Case) []T) []T {
	var out []T
	for _, c := range cases {
		for _, x := range of(c) {
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	}
	return out
}

// requestTypes is every request type the cases counted, sorted.
func requestTypes(cases []*analysis.Case) []string {
	types := union(cases, (*analysis.Case).RequestTypes)
	slices.Sort(types)
	return types
}

// latencyNames is every latency the cases recorded, in the results' order.
func latencyNames(cases []*analysis.Case) []figures.Latency {
	names := union(cases, (*analysis.Case).LatencyNames)
	if len(cases) > 0 && len(cases[0].Results) > 0 {
		cases[0].Results[0].SortLatencies(names)
	}
	return names
}

type builder struct {
	workload string
	unit     string
	cases    []*analysis.Case
	st       *style
	backends []backends.Kind
	clients  []int
	order    []analysis.Series
	series   map[analysis.Series][]*analysis.Case
	runOf    map[*results.Result]*results.Run
	runs     []*results.Run // the runs of this workload
}

// sweepLines makes one line per variant of backend b, with y read from each
// case; cases where y is not measured are skipped.
func (b *builder) sweepLines(kind backends.Kind, dash int, extra string, y func(*analysis.Case) (float64, bool, error)) ([]Line, error) {
	var lines []Line
	for _, s := range b.order {
		if s.Backend != kind {
			continue
		}
		l := Line{
			Label: lineLabel(s.VariantLabel(), kind, extra), Variant: s.VariantLabel(), Class: s.Class, Backend: string(kind),
			Color: b.st.variant[s.VariantLabel()], Dash: dash, Glyph: glyphOf(kind),
		}
		for _, c := range b.series[s] {
			v, ok, err := y(c)
			if err != nil {
				return nil, err
			}
			if ok {
				l.Points = append(l.Points, Point{X: float64(c.Clients), Y: v})
			}
		}
		if len(l.Points) > 0 {
			lines = append(lines, l)
		}
	}
	for _, m := range []mark{clientBoundMark, loadedMark} {
		if l := b.markPoints(kind, y, m); len(l.Points) > 0 {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// ClientBoundLabel is the legend of the crosses drawn over client-bound
// cases' points (results.Result.ClientBound).
const ClientBoundLabel = "client-bound: the load generator was the limit"

// LoadedLabel is the legend of the rings drawn around the points of cases
// measured on a loaded machine (results.Result.Loaded).
const LoadedLabel = "loaded machine: other processes took its CPUs"

// isMark: label is one of the marks drawn over points (client-bound,
// loaded), not a line of its own.
func isMark(label string) bool { return label == ClientBoundLabel || label == LoadedLabel }

// mark is a style drawn over the points of the cases that have a condition.
type mark struct {
	line Line // the style, with no points
	has  func(*analysis.Case) bool
}

var (
	// clientBoundMark: a black cross over the point of a client-bound case:
	// what it shows is zkbench on that machine, not the server.
	clientBoundMark = mark{
		line: Line{Label: ClientBoundLabel, Legend: ClientBoundLabel, Color: "#000000", Glyph: "cross", Scatter: true},
		has:  func(c *analysis.Case) bool { return c.ClientBound() != nil },
	}
	// loadedMark: a grey ring around the point of a case measured on a
	// loaded machine.
	loadedMark = mark{
		line: Line{Label: LoadedLabel, Legend: LoadedLabel, Color: "#808080", Glyph: "ring", Scatter: true},
		has:  func(c *analysis.Case) bool { return c.Loaded() != nil },
	}
)

// markPoints draws m over the points of every case of backend kind that
// has m's condition.
func (b *builder) markPoints(kind backends.Kind, y func(*analysis.Case) (float64, bool, error), m mark) Line {
	l := m.line
	for _, s := range b.order {
		if s.Backend != kind {
			continue
		}
		for _, c := range b.series[s] {
			if !m.has(c) {
				continue
			}
			if v, ok, err := y(c); err == nil && ok {
				l.Points = append(l.Points, Point{X: float64(c.Clients), Y: v})
			}
		}
	}
	return l
}

// shareVariantLegend gives lines of several styles of one variant (client
// and server side, p50 and p99) the variant's one legend entry; the figure's
// Keys explain the styles. The client-bound marks keep their own entry.
func shareVariantLegend(lines []Line, kind backends.Kind) {
	for i := range lines {
		if !isMark(lines[i].Label) {
			lines[i].Legend = lineLabel(lines[i].Variant, kind, "")
		}
	}
}

// value reads figure f of a case (analysis.Case.Value).
func value(f figures.Figure) func(*analysis.Case) (float64, bool, error) {
	return func(c *analysis.Case) (float64, bool, error) { return c.Value(f) }
}

func (b *builder) clientsAxis() Axis {
	return Axis{Label: "clients (one session each)", Scale: Log, Ticks: ticksFor(b.clients)}
}

// ticksFor labels the measured client counts, thinned to at most 10.
func ticksFor(clients []int) []float64 {
	step := (len(clients) + 9) / 10
	var out []float64
	for i := 0; i < len(clients); i += max(step, 1) {
		out = append(out, float64(clients[i]))
	}
	return out
}

func (b *builder) fanout() (*Chart, error) {
	rows := []sideRow{
		{figures.WatchEvents, "client side: notifications delivered"},
		{figures.ServerWatchEvents, "server side: notifications sent"},
	}
	fig := &Chart{
		Name:  b.workload + "-fanout",
		Title: fmt.Sprintf("%s: notification fan-out per %s", b.workload, b.unit),
		Caption: fmt.Sprintf("Watch notifications per %s against clients (log-log). A line that rises with "+
			"clients is a herd: every waiter wakes on every change. A flat line is herd-free.", b.unit),
		Cols: len(b.backends),
	}
	return b.sideRows(fig, rows, "watch events")
}

// bytes draws payload bytes received per operation (client side) and the
// servers' message bytes sent per operation against clients: a recipe that
// lists every waiter on each wake-up is O(N) here even when its fan-out is
// flat. Nil when no case measured bytes (older results files).
func (b *builder) bytes() (*Chart, error) {
	rows := []sideRow{
		{figures.BytesReceived, "client side: payload received"},
		{figures.ServerBytesSent, "server side: message bytes sent"},
	}
	fig := &Chart{
		Name:  b.workload + "-bytes",
		Title: fmt.Sprintf("%s: bytes per %s", b.workload, b.unit),
		Caption: fmt.Sprintf("Bytes per %s against clients (log-log): the clients' payload (data read, names listed, "+
			"watch events' paths) and the servers' message bytes (headers, stats and keep-alives included). Herd-free is a "+
			"claim about notifications: a variant that lists every waiter on each wake-up rises here with a flat fan-out.", b.unit),
		Cols: len(b.backends),
	}
	return b.sideRows(fig, rows, "bytes")
}

// sideRow is one row of a figure by side: a figure, and the side it shows.
type sideRow struct {
	fig  figures.Figure
	side string
}

// sideRows adds to fig one row a side, a log-log panel a backend of the
// row's figure against clients (y: what per operation), leaving out rows
// no case measured. Nil when none was.
func (b *builder) sideRows(fig *Chart, rows []sideRow, what string) (*Chart, error) {
	prows := make([]panelRow, len(rows))
	for i, r := range rows {
		prows[i] = panelRow{side: r.side, y: value(r.fig), axis: Axis{Label: fmt.Sprintf("%s per %s", what, b.unit), Scale: Log}}
	}
	return b.panelRows(fig, prows)
}

// panelRow is one row of a figure against clients: a panel a backend, its
// y read from each case, on axis y; panels of one group share a y range.
type panelRow struct {
	side  string
	y     func(*analysis.Case) (float64, bool, error)
	axis  Axis
	group string
}

// panelRows adds to fig one row of panels a backend per row, leaving out
// rows no case measured. Nil when none was.
func (b *builder) panelRows(fig *Chart, rows []panelRow) (*Chart, error) {
	measured := false
	for _, r := range rows {
		var row []*Panel
		found := false
		for _, kind := range b.backends {
			lines, err := b.sweepLines(kind, 0, "", r.y)
			if err != nil {
				return nil, err
			}
			found = found || len(lines) > 0
			row = append(row, &Panel{
				Title: fmt.Sprintf("%s — %s", kind, r.side),
				X:     b.clientsAxis(),
				Y:     r.axis,
				Lines: lines,
				Group: r.group,
			})
		}
		if found {
			fig.Panels = append(fig.Panels, row...)
			fig.Rows++
			measured = true
		}
	}
	if !measured {
		return nil, nil
	}
	return fig, nil
}

func (b *builder) throughput() (*Chart, error) {
	fig := &Chart{
		Name:    b.workload + "-throughput",
		Title:   fmt.Sprintf("%s: throughput against clients", b.workload),
		Caption: fmt.Sprintf("Successful %ss per second over the measured interval (mean over repeats).", b.unit),
		Rows:    1, Cols: len(b.backends),
	}
	for _, kind := range b.backends {
		lines, err := b.sweepLines(kind, 0, "", value(figures.Throughput))
		if err != nil {
			return nil, err
		}
		fig.Panels = append(fig.Panels, &Panel{
			Title: string(kind),
			X:     b.clientsAxis(),
			Y:     Axis{Label: b.unit + "s per second", Scale: Linear},
			Lines: lines,
		})
	}
	return fig, nil
}

func (b *builder) requests() (*Chart, error) {
	fig := &Chart{
		Name:  b.workload + "-requests",
		Title: fmt.Sprintf("%s: server requests per %s", b.workload, b.unit),
		Caption: fmt.Sprintf("Top row: all requests per %s against clients (log-log), as the clients sent them "+
			"(solid) and as the servers counted them (dashed). Rows below, one per variant: the client's "+
			"requests per %s stacked by type, with the servers' own count of requests (black) and of writes "+
			"(black dashed) over them.", b.unit, b.unit),
		Cols: len(b.backends),
		Keys: []Line{
			{Label: "client side", Color: "#000000", Dash: 0},
			{Label: "server side", Color: "#000000", Dash: 1},
		},
	}
	yAxis := Axis{Label: fmt.Sprintf("requests per %s", b.unit), Scale: Log}
	var top []*Panel
	anyTop := false
	for _, kind := range b.backends {
		client, err := b.sweepLines(kind, 0, "client", value(figures.Requests))
		if err != nil {
			return nil, err
		}
		server, err := b.sweepLines(kind, 1, "server", serverRequests)
		if err != nil {
			return nil, err
		}
		lines := append(client, server...)
		shareVariantLegend(lines, kind)
		anyTop = anyTop || len(lines) > 0
		top = append(top, &Panel{Title: fmt.Sprintf("%s — all requests", kind), X: b.clientsAxis(), Y: yAxis, Lines: lines, Group: "total"})
	}
	if anyTop {
		fig.Panels = append(fig.Panels, top...)
		fig.Rows++
	}
	ticks := make([]float64, len(b.clients))
	for i, n := range b.clients {
		ticks[i] = float64(n)
	}
	for _, vs := range analysis.Distinct(b.cases, func(c *analysis.Case) analysis.Series { s := c.Series(); s.Backend = ""; return s }) {
		v := vs.VariantLabel()
		var row []*Panel
		anyRow := false
		for _, kind := range b.backends {
			p := &Panel{
				Title: fmt.Sprintf("%s — %s, by request type", kind, v),
				X:     Axis{Label: "clients (one session each)", Scale: Category, Ticks: ticks},
				Y:     Axis{Label: fmt.Sprintf("requests per %s", b.unit), Scale: Linear},
				Group: "variant " + v,
			}
			vs.Backend = kind
			cs := b.series[vs]
			types := requestTypes(cs)
			add := func(l Line, y func(*analysis.Case) (float64, bool, error)) error {
				l.Variant, l.Backend = v, string(kind)
				for _, c := range cs {
					val, ok, err := y(c)
					if err != nil {
						return err
					}
					if ok {
						l.Points = append(l.Points, Point{X: float64(c.Clients), Y: val})
					}
				}
				if len(l.Points) > 0 {
					p.Lines = append(p.Lines, l)
				}
				return nil
			}
			for _, t := range types {
				if err := add(Line{Label: figures.RequestsOf(t).Label, Color: b.st.reqType[t], Bar: true}, value(figures.RequestsOf(t))); err != nil {
					return nil, err
				}
			}
			if err := add(Line{Label: figures.ServerRequests.Label, Color: "#000000", Glyph: "cross"}, serverRequests); err != nil {
				return nil, err
			}
			if err := add(Line{Label: figures.ServerWrites.Label, Color: "#000000", Dash: 1, Glyph: "cross"}, value(figures.ServerWrites)); err != nil {
				return nil, err
			}
			anyRow = anyRow || len(p.Lines) > 0
			row = append(row, p)
		}
		if anyRow {
			fig.Panels = append(fig.Panels, row...)
			fig.Rows++
		}
	}
	if fig.Rows == 0 {
		return nil, nil
	}
	return fig, nil
}

// serverRequests is the servers' count of requests per operation: their
// own total when scraped, else writes plus reads.
func serverRequests(c *analysis.Case) (float64, bool, error) {
	if v, ok := c.PerOp(figures.ServerRequests.Key); ok {
		return v, true, nil
	}
	w, okw := c.PerOp(figures.ServerWrites.Key)
	r, okr := c.PerOp(figures.ServerReads.Key)
	return w + r, okw && okr, nil
}

func (b *builder) percentiles(name figures.Latency) (*Chart, error) {
	fig := &Chart{
		Name:  fmt.Sprintf("%s-latency-%s", b.workload, name),
		Title: fmt.Sprintf("%s: %s latency percentiles against clients", b.workload, name),
		Caption: fmt.Sprintf("%s latency at p50 (solid), p99 (dashed) and p99.9 (dotted), from the recorded "+
			"histograms merged over repeats (log-log).", name),
		Rows: 1, Cols: len(b.backends),
	}
	// p50 solid, p99 dashed, p99.9 dotted.
	for dash, q := range figures.Latencies() {
		fig.Keys = append(fig.Keys, Line{Label: q.Key, Color: "#000000", Dash: dash})
	}
	for _, kind := range b.backends {
		p := &Panel{Title: string(kind), X: b.clientsAxis(), Y: Axis{Label: string(name) + " latency (ms)", Scale: Log}}
		for dash, q := range figures.Latencies() {
			lines, err := b.sweepLines(kind, dash, q.Key, value(q.ForLatency(name)))
			if err != nil {
				return nil, err
			}
			shareVariantLegend(lines, kind)
			p.Lines = append(p.Lines, lines...)
		}
		// Group lines by variant so the legend reads variant by variant.
		slices.SortStableFunc(p.Lines, func(a, b Line) int { return analysis.CompareVariants(a.Class, a.Variant, b.Class, b.Variant) })
		fig.Panels = append(fig.Panels, p)
	}
	return fig, nil
}

// ninesStep is the spacing of distribution samples, in nines.
const ninesStep = 0.05

func (b *builder) distribution(name figures.Latency) (*Chart, error) {
	fig := &Chart{
		Name:  fmt.Sprintf("%s-distribution-%s", b.workload, name),
		Title: fmt.Sprintf("%s: %s latency distribution by percentile", b.workload, name),
		Caption: "Latency at each percentile (HdrHistogram style; x in nines: 90%, 99%, 99.9%...), " +
			"at the largest (solid) and smallest (dashed) client count each variant measured. The last " +
			"point of a line is its maximum.",
		Rows: 1, Cols: len(b.backends),
	}
	for _, kind := range b.backends {
		p := &Panel{
			Title: string(kind),
			X:     Axis{Label: "percentile", Scale: Nines},
			Y:     Axis{Label: string(name) + " latency (ms)", Scale: Log},
		}
		for _, s := range b.order {
			if s.Backend != kind {
				continue
			}
			var have []*analysis.Case
			for _, c := range b.series[s] {
				h, err := c.Latency(name)
				if err != nil {
					return nil, err
				}
				if h != nil && h.TotalCount() > 0 {
					have = append(have, c)
				}
			}
			if len(have) == 0 {
				continue
			}
			picks := []*analysis.Case{have[len(have)-1]}
			if len(have) > 1 {
				picks = append(picks, have[0])
			}
			for i, c := range picks {
				h, _ := c.Latency(name)
				l := Line{
					Label:   lineLabel(s.VariantLabel(), kind, fmt.Sprintf("N=%d", c.Clients)),
					Variant: s.VariantLabel(), Class: s.Class, Backend: string(kind),
					Color: b.st.variant[s.VariantLabel()], Dash: i,
				}
				top := math.Log10(float64(h.TotalCount()))
				for x := 0.0; x < top; x += ninesStep {
					q := 100 * (1 - math.Pow(10, -x))
					l.Points = append(l.Points, Point{X: x, Y: analysis.Millis(time.Duration(h.ValueAtQuantile(q)))})
				}
				l.Points = append(l.Points, Point{X: max(top, ninesStep), Y: analysis.Millis(time.Duration(h.Max()))})
				p.Lines = append(p.Lines, l)
			}
		}
		fig.Panels = append(fig.Panels, p)
	}
	return fig, nil
}

// maxTimelineRows bounds the rows of the over-time figure.
const maxTimelineRows = 6

func (b *builder) timeline() *Chart {
	rows := b.clients
	if len(rows) > maxTimelineRows {
		// Keep the smallest and largest and spread the rest.
		var pick []int
		for i := range maxTimelineRows {
			pick = append(pick, rows[i*(len(rows)-1)/(maxTimelineRows-1)])
		}
		rows = slices.Compact(pick)
	}
	fig := &Chart{
		Name:  b.workload + "-timeline",
		Title: fmt.Sprintf("%s: throughput over time", b.workload),
		Caption: fmt.Sprintf("Successful %ss per second in each interval of the measured case. Drops to zero "+
			"are stalls; a herd shows as bursts and gaps. Repeats are drawn as separate lines. Injected faults "+
			"are red: a band from the fault to its undo, a line for an instant one. Where clients saw session "+
			"changes, a row below counts them per interval.", b.unit),
		Cols: len(b.backends),
	}
	found, faulted := false, false
	for _, n := range rows {
		var row, sessRow []*Panel
		anySessions := false
		for _, kind := range b.backends {
			p := &Panel{
				Title:  fmt.Sprintf("%s — N=%d", kind, n),
				X:      Axis{Label: "time in case (s)", Scale: Linear},
				Y:      Axis{Label: b.unit + "s per second", Scale: Linear},
				XGroup: "time",
			}
			sp := &Panel{
				Title: fmt.Sprintf("%s — N=%d: session changes", kind, n),
				X:     Axis{Label: "time in case (s)", Scale: Linear},
				Group: "sessions", XGroup: "time",
			}
			counts := map[string][]int64{}
			var iv time.Duration
			outside, summed := 0, 0
			for _, s := range b.order {
				if s.Backend != kind {
					continue
				}
				for _, c := range b.series[s] {
					if c.Clients != n {
						continue
					}
					for _, r := range c.Results {
						l, ok := rateLine(r)
						if !ok {
							continue
						}
						l.Label, l.Variant, l.Backend = lineLabel(s.VariantLabel(), kind, ""), s.VariantLabel(), string(kind)
						l.Color = b.st.variant[s.VariantLabel()]
						p.Lines = append(p.Lines, l)
						found = true
						ev := eventsOf(b.runOf[r], r)
						addMarks(p, ev.marks)
						addMarks(sp, ev.marks)
						outside += ev.outside
						if len(ev.sessions) > 0 {
							summed++
							iv = r.Series.Interval
						}
						for st, cs := range ev.sessions {
							if counts[st] == nil {
								counts[st] = make([]int64, len(cs))
							}
							for i, v := range cs {
								if i < len(counts[st]) {
									counts[st][i] += v
								}
							}
						}
					}
				}
			}
			if outside > 0 {
				p.Notes = append(p.Notes, fmt.Sprintf("%d fault event(s) outside the measured interval not shown", outside))
			}
			if summed > 0 {
				anySessions = true
				sp.Lines = sessionLines(counts, iv, string(kind))
				sp.Y = Axis{Label: intervalLabel(iv), Scale: Linear, Count: true}
				if summed > 1 {
					sp.Notes = append(sp.Notes, fmt.Sprintf("summed over %d cases", summed))
				}
			} else {
				sp.Y = Axis{Label: "session events per interval", Scale: Linear, Count: true}
			}
			faulted = faulted || len(p.Marks) > 0
			row, sessRow = append(row, p), append(sessRow, sp)
		}
		fig.Panels = append(fig.Panels, row...)
		fig.Rows++
		if anySessions {
			fig.Panels = append(fig.Panels, sessRow...)
			fig.Rows++
		}
	}
	if !found {
		return nil
	}
	if faulted {
		fig.Keys = append(fig.Keys, Line{Label: "injected fault", Color: markColor})
	}
	return fig
}

// rateLine is a result's series as a rate per second at the middle of
// each interval; false without a series.
func rateLine(r *results.Result) (Line, bool) {
	iv := r.Series.Interval.Seconds()
	if iv <= 0 || len(r.Series.Counts) == 0 {
		return Line{}, false
	}
	var l Line
	for i, n := range r.Series.Counts {
		// The last interval may end with the case: rate it over the time
		// it covered, or a cut interval looks like a stall.
		w := iv
		if r.Elapsed > 0 {
			w = min(iv, r.Elapsed.Seconds()-float64(i)*iv)
		}
		if w < iv/10 {
			continue
		}
		l.Points = append(l.Points, Point{X: float64(i)*iv + w/2, Y: float64(n) / w})
	}
	return l, true
}

// finish drops points a log scale cannot show, notes empty panels, and
// gives the panels of each group the same axis ranges.
func (f *Chart) finish() {
	type rng struct{ lo, hi float64 }
	xs, ys := map[string]*rng{}, map[string]*rng{}
	get := func(m map[string]*rng, key string) *rng {
		if m[key] == nil {
			m[key] = &rng{math.Inf(1), math.Inf(-1)}
		}
		return m[key]
	}
	for _, p := range f.Panels {
		rx, ry := get(xs, p.xGroup()), get(ys, p.Group)
		stack := map[float64]float64{}
		for i := range p.Lines {
			l := &p.Lines[i]
			kept := l.Points[:0]
			dropped := 0
			for _, pt := range l.Points {
				if (p.X.Scale == Log && pt.X <= 0) || (p.Y.Scale == Log && pt.Y <= 0) ||
					math.IsNaN(pt.X) || math.IsNaN(pt.Y) || math.IsInf(pt.X, 0) || math.IsInf(pt.Y, 0) {
					dropped++
					continue
				}
				kept = append(kept, pt)
				y := pt.Y
				if l.Bar {
					stack[pt.X] += pt.Y
					y = stack[pt.X]
				}
				rx.lo, rx.hi = min(rx.lo, pt.X), max(rx.hi, pt.X)
				ry.lo, ry.hi = min(ry.lo, y), max(ry.hi, y)
			}
			l.Points = kept
			if dropped > 0 {
				p.Notes = append(p.Notes, fmt.Sprintf("%s: %d zero point(s) not shown on the log scale", l.Label, dropped))
			}
		}
		p.Lines = slices.DeleteFunc(p.Lines, func(l Line) bool { return len(l.Points) == 0 })
		if len(p.Lines) == 0 {
			p.Notes = append(p.Notes, "not measured")
		}
	}
	for _, p := range f.Panels {
		rx, ry := xs[p.xGroup()], ys[p.Group]
		if math.IsInf(rx.lo, 1) {
			*rx = rng{1, 10}
		}
		if math.IsInf(ry.lo, 1) {
			*ry = rng{1, 10}
		}
		p.X.Min, p.X.Max = pad(p.X, rx.lo, rx.hi)
		p.Y.Min, p.Y.Max = pad(p.Y, ry.lo, ry.hi)
		if p.Y.Scale == Linear && ry.lo == 0 && ry.hi == 0 && len(p.Lines) > 0 {
			// An axis from 0 to 1 alone could be read as "small"; say it.
			p.Notes = append(p.Notes, "every value is 0")
		}
	}
}

// pad widens [lo, hi] so that points do not sit on the frame. Linear axes
// of non-negative values start at zero, and run to 1 when every value is
// zero; category axes span their ticks.
func pad(a Axis, lo, hi float64) (float64, float64) {
	switch a.Scale {
	case Log:
		if lo == hi {
			return lo / 2, hi * 2
		}
		return lo / 1.25, hi * 1.25
	case Nines:
		return 0, math.Ceil(hi)
	case Category:
		return -0.5, float64(len(a.Ticks)) - 0.5
	}
	if lo >= 0 {
		lo = 0
	}
	if hi == 0 && lo == 0 {
		return 0, 1
	}
	if lo == hi {
		return lo - 1, hi + 1
	}
	return lo, hi + (hi-lo)*0.05
}

// Files lists the file names a figure is written as, one per format.
func (f *Chart) Files(formats []string) []string {
	out := make([]string, 0, len(formats))
	for _, ft := range formats {
		out = append(out, f.Name+"."+ft)
	}
	return out
}

// Find returns the figure named name, or nil.
func Find(figs []*Chart, name string) *Chart {
	i := slices.IndexFunc(figs, func(f *Chart) bool { return f.Name == name })
	if i < 0 {
		return nil
	}
	return figs[i]
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, s)
}
