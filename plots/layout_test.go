package plots

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"

	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

// affine is a canvas transform: x' = a x + c y + e, y' = b x + d y + f.
type affine struct{ a, b, c, d, e, f float64 }

var identity = affine{a: 1, d: 1}

func (m affine) apply(p vg.Point) vg.Point {
	x, y := float64(p.X), float64(p.Y)
	return vg.Point{X: vg.Length(m.a*x + m.c*y + m.e), Y: vg.Length(m.b*x + m.d*y + m.f)}
}

// then is m applied after n: new transforms act in the local coordinates.
func (m affine) then(n affine) affine {
	return affine{
		a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b,
		c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f,
	}
}

// drawnText is one text a canvas was asked to draw, with the box its font
// gives it on the page.
type drawnText struct {
	text string
	box  vg.Rectangle
}

func (d drawnText) String() string {
	return fmt.Sprintf("%q at (%.1f,%.1f)-(%.1f,%.1f)", d.text, d.box.Min.X, d.box.Min.Y, d.box.Max.X, d.box.Max.Y)
}

// recorder is a vg.Canvas that draws nothing and records every text drawn
// on it, its box measured with the font's own width and extents and put
// through the canvas's transforms (axis labels are rotated), so that a test
// checks the geometry of a figure rather than its pixels.
type recorder struct {
	m     affine
	stack []affine
	texts []drawnText
}

var _ vg.Canvas = (*recorder)(nil)

func newRecorder() *recorder { return &recorder{m: identity} }

func (r *recorder) SetLineWidth(vg.Length)              {}
func (r *recorder) SetLineDash([]vg.Length, vg.Length)  {}
func (r *recorder) SetColor(color.Color)                {}
func (r *recorder) Stroke(vg.Path)                      {}
func (r *recorder) Fill(vg.Path)                        {}
func (r *recorder) DrawImage(vg.Rectangle, image.Image) {}
func (r *recorder) Push()                               { r.stack = append(r.stack, r.m) }
func (r *recorder) Pop() {
	r.m = r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
}

func (r *recorder) Rotate(rad float64) {
	sin, cos := math.Sincos(rad)
	r.m = r.m.then(affine{a: cos, b: sin, c: -sin, d: cos})
}

func (r *recorder) Translate(pt vg.Point) {
	r.m = r.m.then(affine{a: 1, d: 1, e: float64(pt.X), f: float64(pt.Y)})
}

func (r *recorder) Scale(x, y float64) { r.m = r.m.then(affine{a: x, d: y}) }

func (r *recorder) FillString(f font.Face, pt vg.Point, txt string) {
	if f.Font.Size == 0 || txt == "" {
		return // not drawn (vg.Canvas)
	}
	w, ext := f.Width(txt), f.Extents()
	box := vg.Rectangle{Min: vg.Point{X: vg.Length(math.Inf(1)), Y: vg.Length(math.Inf(1))}, Max: vg.Point{X: vg.Length(math.Inf(-1)), Y: vg.Length(math.Inf(-1))}}
	for _, c := range []vg.Point{{X: 0, Y: -ext.Descent}, {X: w, Y: -ext.Descent}, {X: 0, Y: ext.Ascent}, {X: w, Y: ext.Ascent}} {
		p := r.m.apply(pt.Add(c))
		box.Min.X, box.Min.Y = min(box.Min.X, p.X), min(box.Min.Y, p.Y)
		box.Max.X, box.Max.Y = max(box.Max.X, p.X), max(box.Max.Y, p.Y)
	}
	r.texts = append(r.texts, drawnText{txt, box})
}

// eps absorbs float rounding at the edges.
const eps = 0.01

func inside(in, out vg.Rectangle) bool {
	return in.Min.X >= out.Min.X-eps && in.Min.Y >= out.Min.Y-eps && in.Max.X <= out.Max.X+eps && in.Max.Y <= out.Max.Y+eps
}

func overlap(a, b vg.Rectangle) bool { return overlapBy(a, b, eps) }

// overlapBy says whether a and b share more than tol in both directions.
func overlapBy(a, b vg.Rectangle, tol vg.Length) bool {
	return a.Min.X < b.Max.X-tol && b.Min.X < a.Max.X-tol && a.Min.Y < b.Max.Y-tol && b.Min.Y < a.Max.Y-tol
}

// checkLayout draws f to recorders, the panels apart from what surrounds
// them, and fails where a text leaves the canvas, a panel's text leaves the
// panels' area, a title, legend or footer text reaches into the panels, two
// of those overlap, or the legend or footer lacks an entry.
func checkLayout(t *testing.T, f *Chart) {
	t.Helper()
	lay := layoutOf(f)
	canvas := vg.Rectangle{Max: vg.Point{X: lay.width, Y: lay.height}}
	panels, chrome := newRecorder(), newRecorder()
	if err := drawPanels(panels, f, lay); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	drawChrome(chrome, lay)
	if len(panels.texts) == 0 {
		t.Fatalf("%s: the panels drew no text (no titles, ticks or labels?)", f.Name)
	}
	for _, d := range append(slices.Clone(panels.texts), chrome.texts...) {
		if !inside(d.box, canvas) {
			t.Errorf("%s: %v is outside the %.0fx%.0f canvas", f.Name, d, lay.width, lay.height)
		}
	}
	for i, d := range panels.texts {
		if !inside(d.box, lay.grid) {
			t.Errorf("%s: panel text %v leaves the panels' area %v", f.Name, d, lay.grid)
		}
		for _, o := range panels.texts[i+1:] {
			if overlapBy(d.box, o.box, 1) {
				t.Errorf("%s: panel text %v overlaps %v", f.Name, d, o)
			}
		}
	}
	for i, d := range chrome.texts {
		if overlap(d.box, lay.grid) {
			t.Errorf("%s: %v reaches into the panels' area %v", f.Name, d, lay.grid)
		}
		for _, o := range chrome.texts[i+1:] {
			if overlap(d.box, o.box) {
				t.Errorf("%s: %v overlaps %v", f.Name, d, o)
			}
		}
	}
	drawn := func(txt string) int {
		n := 0
		for _, d := range chrome.texts {
			if d.text == txt {
				n++
			}
		}
		return n
	}
	entries := legendOf(f)
	for _, e := range entries {
		if drawn(e.label) == 0 {
			t.Errorf("%s: legend entry %q not drawn", f.Name, e.label)
		}
	}
	// A legend entry's sample sits left of its text, inside its cell.
	for _, c := range lay.legend {
		if !inside(c.box, canvas) || overlap(c.box, lay.grid) {
			t.Errorf("%s: legend cell %q %v outside the canvas or over the panels", f.Name, c.label, c.box)
		}
	}
	var texts []string
	for _, d := range chrome.texts {
		texts = append(texts, d.text)
	}
	all := strings.Join(texts, " ")
	for _, line := range append(append([]string{f.Title, f.Warning}, f.Summary...), f.Footer...) {
		if !strings.Contains(all, strings.Join(strings.Fields(line), " ")) {
			t.Errorf("%s: %q not drawn whole", f.Name, line)
		}
	}
}

// figureKind is what a figure shows, without its workload and histogram:
// "lock-latency-acquire" is "latency".
func figureKind(f *Chart, workloads []string) string {
	name := f.Name
	for _, w := range workloads {
		if rest, ok := strings.CutPrefix(name, safeName(w)+"-"); ok {
			name = rest
			break
		}
	}
	kind, _, _ := strings.Cut(name, "-")
	return kind
}

// allKinds are the figure kinds Build makes.
var allKinds = []string{"herd", "fanout", "bytes", "throughput", "usl", "requests", "loadgen", "latency", "distribution", "timeline"}

// TestLayout lays out and draws, to a recording canvas, every figure of the
// synthetic inputs, of the committed real sweep and fault run, and of kept
// runs (docs/runs), and checks that every text lies inside the canvas, that
// the legend and footer stay clear of the panels and of each other, and
// that every figure kind was checked.
func TestLayout(t *testing.T) {
	t.Parallel()
	type input struct {
		name string
		runs []*results.Run
	}
	synthetic := loadRuns(t, testresults.Files...)
	// Synthetic files do not measure bytes or the load generator: give one
	// copy of them both, so their figures are checked too.
	measuredMore := loadRuns(t, "lock-zookeeper.json")
	for i := range measuredMore[0].Results {
		r := &measuredMore[0].Results[i]
		r.PerOp["bytes_received"] = 90 * float64(r.Clients)
		r.PerOp["server_bytes_sent"] = 100 * float64(r.Clients)
		r.Load = &results.Load{Cores: 2, CPUFraction: 0.25}
		r.Cost.ClientCostPerClient = 1000 * float64(r.Clients)
		if r.Clients == testresults.LockClients[len(testresults.LockClients)-1] {
			r.ClientBound = &results.ClientBound{Reasons: []results.BoundReason{results.BoundCPU}, Detail: "cpu (97% of 2 cores)"}
		}
	}
	fault, err := results.ReadFile(filepath.Join("testdata", "fault-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := []input{
		{"synthetic", synthetic},
		{"synthetic with bytes, load and a client-bound case", measuredMore},
		{"measured", loadRuns(t, testresults.Measured...)},
		{"fault", []*results.Run{fault}},
	}
	for _, kept := range []string{"lock-zookeeper", "partition-docker-zookeeper", "queue-etcd", "lock-etcd"} {
		r, err := results.ReadFile(filepath.Join("..", "docs", "runs", kept, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{"docs/runs/" + kept, []*results.Run{r}})
	}
	kinds := map[string]bool{}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			figs, err := Build(in.runs)
			if err != nil {
				t.Fatal(err)
			}
			var workloads []string
			for _, r := range in.runs {
				for _, res := range r.Results {
					workloads = append(workloads, res.Workload)
				}
			}
			for _, f := range figs {
				kinds[figureKind(f, workloads)] = true
				if len(f.Footer) == 0 {
					t.Errorf("%s: no footer", f.Name)
				}
				checkLayout(t, f)
			}
		})
	}
	for _, k := range allKinds {
		if !kinds[k] {
			t.Errorf("no %s figure was checked", k)
		}
	}
}

// TestLayoutAtAnySize lays out figures far from the usual: many legend
// entries with long labels, a long title, warning and footer, one panel and
// a 3x4 grid, and checks nothing is clipped or overlaps.
func TestLayoutAtAnySize(t *testing.T) {
	t.Parallel()
	panel := func(lines int, label string) *Panel {
		p := &Panel{Title: "a panel title of some length", X: Axis{Label: "clients (one session each)", Scale: Log, Min: 1, Max: 1000},
			Y: Axis{Label: "a count", Scale: Linear, Count: true, Min: 0, Max: 1}}
		for i := range lines {
			p.Lines = append(p.Lines, Line{Label: fmt.Sprintf("%s %d", label, i), Color: palette[i%len(palette)], Glyph: "circle",
				Points: []Point{{X: 1, Y: 0}, {X: 1000, Y: 0}}})
		}
		return p
	}
	long := strings.Repeat("a long footer that names many runs · ", 12)
	for _, f := range []*Chart{
		{Name: "one-entry", Title: "t", Rows: 1, Cols: 1, Panels: []*Panel{panel(1, "x")}},
		{Name: "many-entries", Title: "a figure with forty legend entries", Rows: 1, Cols: 1,
			Panels: []*Panel{panel(40, "a legend entry with a rather long label")}, Footer: []string{long}},
		{Name: "one-very-long-entry", Title: "t", Rows: 1, Cols: 1,
			Panels: []*Panel{panel(1, strings.Repeat("an entry longer than a panel is wide ", 3))}},
		{Name: "long-title", Title: strings.Repeat("a title longer than its one panel ", 3), Warning: long, Summary: []string{long}, Rows: 1, Cols: 1,
			Panels: []*Panel{panel(3, "v")}},
		{Name: "grid", Title: "a 3x4 grid", Rows: 3, Cols: 4, Panels: func() []*Panel {
			var ps []*Panel
			for i := range 12 {
				ps = append(ps, panel(i%5+1, fmt.Sprintf("variant %d", i)))
			}
			return ps
		}(), Footer: []string{"run a", "run b", "run c"}, Keys: []Line{{Label: "p50", Color: "#000000"}, {Label: "p99", Color: "#000000", Dash: 1}}},
	} {
		t.Run(f.Name, func(t *testing.T) {
			f.finish()
			checkLayout(t, f)
		})
	}
}

// A panel note wider than the data area, over a panel whose points all sit
// at one client count: gonum pads the data area to hold every glyph box,
// and a note's box made that padding infinite (the plot then filled an
// unbounded area: most of an hour for a 10,000-client config run). The note
// wraps and the panel draws.
func TestLongNoteAtOneClientCount(t *testing.T) {
	x := Axis{Label: "clients", Scale: Log, Min: 5000, Max: 20000, Ticks: []float64{10000}}
	y := Axis{Label: "events", Scale: Log, Min: 4800, Max: 12900}
	panel := func(notes ...string) *Panel {
		return &Panel{Title: "p", X: x, Y: y, Notes: notes, Lines: []Line{
			{Label: "a", Color: "#2ca02c", Glyph: "circle", Points: []Point{{X: 10000, Y: 6852}}},
			{Label: "b", Color: "#9467bd", Glyph: "circle", Points: []Point{{X: 10000, Y: 10308}}},
		}}
	}
	f := &Chart{Name: "long-note", Title: "t", Rows: 2, Cols: 1, Panels: []*Panel{
		panel("polling (zookeeper): 1 zero point(s) not shown on the log scale",
			"loaded machine: other processes took its CPUs: 1 zero point(s) not shown on the log scale"),
		panel(),
	}}
	for _, format := range []string{"png", "svg"} {
		var buf bytes.Buffer
		if err := Render(&buf, f, format); err != nil || buf.Len() == 0 {
			t.Fatalf("%s: %v, %d bytes", format, err, buf.Len())
		}
	}
}
