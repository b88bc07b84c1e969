package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/zkbench/zkbench/figures"
)

// Formats are the image formats Render writes.
var Formats = []string{"png", "svg"}

// Render draws f in format ("png" or "svg") to w.
func Render(w io.Writer, f *Chart, format string) error {
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("plots: format %q: want one of %v", format, Formats)
	}
	if f.Rows*f.Cols != len(f.Panels) || len(f.Panels) == 0 {
		return fmt.Errorf("plots: figure %s has %d panels for %dx%d", f.Name, len(f.Panels), f.Rows, f.Cols)
	}
	lay := layoutOf(f)
	var c vg.CanvasWriterTo
	if format == "png" {
		c = fastPNG{vgimg.New(lay.width, lay.height)}
	} else {
		var err error
		if c, err = draw.NewFormattedCanvas(lay.width, lay.height, format); err != nil {
			return fmt.Errorf("plots: %w", err)
		}
	}
	c.SetColor(color.White)
	c.Fill(rectPath(vg.Rectangle{Max: vg.Point{X: lay.width, Y: lay.height}}))
	if err := drawPanels(c, f, lay); err != nil {
		return err
	}
	drawChrome(c, lay)
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("plots: write %s.%s: %w", f.Name, format, err)
	}
	return nil
}

func rectPath(r vg.Rectangle) vg.Path {
	var p vg.Path
	p.Move(r.Min)
	p.Line(vg.Point{X: r.Max.X, Y: r.Min.Y})
	p.Line(r.Max)
	p.Line(vg.Point{X: r.Min.X, Y: r.Max.Y})
	p.Close()
	return p
}

// drawPanels draws f's panels into lay's grid, their axes aligned.
func drawPanels(c vg.Canvas, f *Chart, lay *layout) error {
	grid := make([][]*plot.Plot, f.Rows)
	for r := range f.Rows {
		for col := range f.Cols {
			p, err := panelPlot(f.Panels[r*f.Cols+col])
			if err != nil {
				return fmt.Errorf("plots: %s: %w", f.Name, err)
			}
			grid[r] = append(grid[r], p)
		}
	}
	tiles := draw.Tiles{Rows: f.Rows, Cols: f.Cols, PadX: 12, PadY: 12, PadTop: 4, PadLeft: 4, PadRight: 4, PadBottom: 4}
	canvases := plot.Align(grid, tiles, draw.Canvas{Canvas: c, Rectangle: lay.grid})
	for r := range canvases {
		for col, cv := range canvases[r] {
			if !finite(cv.Rectangle) || cv.Max.X <= cv.Min.X || cv.Max.Y <= cv.Min.Y {
				return fmt.Errorf("plots: %s: panel %q has no room (%v)", f.Name, f.Panels[r*f.Cols+col].Title, cv.Rectangle)
			}
		}
	}
	for r := range grid {
		for col := range grid[r] {
			grid[r][col].Draw(canvases[r][col])
		}
	}
	return nil
}

func finite(r vg.Rectangle) bool {
	for _, v := range []vg.Length{r.Min.X, r.Min.Y, r.Max.X, r.Max.Y} {
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return false
		}
	}
	return true
}

// fastPNG encodes with the fastest deflate level: plots are mostly flat
// colour, so files grow little and encoding is several times quicker.
type fastPNG struct{ *vgimg.Canvas }

func (c fastPNG) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(cw, c.Image())
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func parseColor(hex string) color.Color {
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if len(hex) != 7 || hex[0] != '#' || err != nil {
		return color.Black
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

var dashes = [][]vg.Length{nil, {6, 3}, {1.5, 2.5}, {6, 2, 1.5, 2}}

func styles(l Line) (draw.LineStyle, draw.GlyphStyle) {
	col := parseColor(l.Color)
	line := draw.LineStyle{Color: col, Width: 1.6}
	if l.Dash > 0 && l.Dash < len(dashes) {
		line.Dashes = dashes[l.Dash]
	}
	glyph := draw.GlyphStyle{Color: col, Radius: 2.6}
	if isMark(l.Label) {
		// Drawn over a point's own glyph: larger, or the glyph hides it.
		glyph.Radius = 5
	}
	switch l.Glyph {
	case "circle":
		glyph.Shape = draw.CircleGlyph{}
	case "triangle":
		glyph.Shape = draw.TriangleGlyph{}
	case "square":
		glyph.Shape = draw.SquareGlyph{}
	case "cross":
		glyph.Shape = draw.CrossGlyph{}
	case "ring":
		glyph.Shape = draw.RingGlyph{}
	}
	return line, glyph
}

func panelPlot(pn *Panel) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.Title.TextStyle.Font.Size = 11
	p.X.Label.Text = pn.X.Label
	p.Y.Label.Text = pn.Y.Label
	p.X.Label.TextStyle.Font.Size = 10
	p.Y.Label.TextStyle.Font.Size = 10
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 0xe4}
	grid.Horizontal.Color = color.Gray{Y: 0xe4}
	p.Add(grid)
	if err := addMarkPlotters(p, pn); err != nil {
		return nil, err
	}
	// Baselines first and the herd last, so that where lines coincide the
	// naive and herd-free ones stay visible.
	drawOrder := slices.Clone(pn.Lines)
	rank := func(l Line) int {
		if l.Class == "" {
			return figures.Other.Rank() // a line of no variant (a request type, a session event)
		}
		return l.Class.Rank()
	}
	slices.SortStableFunc(drawOrder, func(a, b Line) int { return -cmp.Compare(rank(a), rank(b)) })
	var below *plotter.BarChart
	for _, l := range pn.Lines {
		if !l.Bar {
			continue
		}
		vals := make(plotter.Values, len(pn.X.Ticks))
		for _, pt := range l.Points {
			if i := slices.Index(pn.X.Ticks, pt.X); i >= 0 {
				vals[i] = pt.Y
			}
		}
		width := (panelW - 70) / vg.Length(max(len(vals), 1)) * 0.6
		bc, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("bars %s: %w", l.Label, err)
		}
		bc.Color = parseColor(l.Color)
		bc.LineStyle.Width = 0
		if below != nil {
			bc.StackOn(below)
		}
		p.Add(bc)
		below = bc
	}
	for _, l := range drawOrder {
		if l.Bar {
			continue
		}
		xys := make(plotter.XYs, len(l.Points))
		for i, pt := range l.Points {
			xys[i] = plotter.XY{X: pn.X.fwd(pt.X), Y: pn.Y.fwd(pt.Y)}
		}
		ls, gs := styles(l)
		if !l.Scatter {
			line, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("line %s: %w", l.Label, err)
			}
			line.LineStyle = ls
			p.Add(line)
		}
		if gs.Shape != nil {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("line %s: %w", l.Label, err)
			}
			sc.GlyphStyle = gs
			p.Add(sc)
		}
	}
	setAxis(&p.X, pn.X)
	setAxis(&p.Y, pn.Y)
	if err := addMarkLabels(p, pn); err != nil {
		return nil, err
	}
	// Notes sit in the top-left corner of the data area, wrapped to its
	// width.
	if len(pn.Notes) > 0 {
		var xs plotter.XYs
		var labels []string
		for _, n := range pn.Notes {
			for _, l := range wrap(noteStyle, n, noteWidth) {
				xs = append(xs, plotter.XY{X: pn.X.at(0.03), Y: pn.Y.at(0.95 - 0.07*float64(len(labels)))})
				labels = append(labels, l)
			}
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xs, Labels: labels})
		if err != nil {
			return nil, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i] = noteStyle
		}
		// Drawn without glyph boxes: gonum pads the data area to hold
		// every glyph box, and a text wider than the area made that
		// padding infinite (a plot then took most of an hour to fill).
		p.Add(plotOnly{lb})
		// Labels widen the data range; put the shared ranges back.
		setAxis(&p.X, pn.X)
		setAxis(&p.Y, pn.Y)
	}
	return p, nil
}

// noteStyle and noteWidth are a panel note's text and the width it wraps
// at: the data area of a panel (panelW less its axes), with room to spare.
var noteStyle = textStyle(9, color.Gray{Y: 0x60})

const noteWidth vg.Length = 220

// plotOnly is a plotter that claims no glyph boxes.
type plotOnly struct{ plot.Plotter }

// fwd maps a data value to the plotted coordinate. Log axes are drawn as
// linear axes over log10 of the data: gonum's LogScale places a vertical
// axis label by the linear mid-range, which on a log axis pushes the label
// above the panel and squeezes the data area.
func (a Axis) fwd(v float64) float64 {
	switch a.Scale {
	case Log:
		return math.Log10(v)
	case Category:
		if i := slices.Index(a.Ticks, v); i >= 0 {
			return float64(i)
		}
	}
	return v
}

// at returns the plotted coordinate at fraction f along a.
func (a Axis) at(f float64) float64 {
	lo, hi := a.fwd(a.Min), a.fwd(a.Max)
	return lo + f*(hi-lo)
}

func setAxis(pa *plot.Axis, a Axis) {
	pa.Min, pa.Max = a.fwd(a.Min), a.fwd(a.Max)
	if a.Scale == Category {
		pa.Min, pa.Max = a.Min, a.Max
	}
	pa.Tick.Label.Font.Size = 9
	switch a.Scale {
	case Log:
		pa.Tick.Marker = logTicks{}
		if len(a.Ticks) > 0 {
			pa.Tick.Marker = valueTicks{values: a.Ticks, log: true}
		}
	case Nines:
		pa.Tick.Marker = ninesTicks{}
	case Category:
		var ts plot.ConstantTicks
		for i, v := range a.Ticks {
			ts = append(ts, plot.Tick{Value: float64(i), Label: formatTick(v)})
		}
		pa.Tick.Marker = ts
	default:
		switch {
		case len(a.Ticks) > 0:
			pa.Tick.Marker = valueTicks{values: a.Ticks}
		case a.Count:
			pa.Tick.Marker = countTicks{}
		default:
			pa.Tick.Marker = linearTicks{}
		}
	}
}

// linearTicks are gonum's default ticks labelled as every other axis is
// (formatTick: "250", not "250.00").
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = formatTick(ts[i].Value)
		}
	}
	return ts
}

// countTicks label whole numbers only, about five of them (a count axis
// from 0 to 1 has two labels, not "0.5").
type countTicks struct{}

func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1.0
	for (hi-lo)/step > 6 {
		switch m := step / math.Pow(10, math.Floor(math.Log10(step))); m {
		case 2:
			step *= 2.5
		default:
			step *= 2
		}
	}
	var out []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		out = append(out, plot.Tick{Value: v, Label: formatTick(v)})
	}
	return out
}

// valueTicks labels exactly the given values (the measured client counts),
// placed at log10 of each on a log axis.
type valueTicks struct {
	values []float64
	log    bool
}

func (v valueTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, x := range v.values {
		pos := x
		if v.log {
			pos = math.Log10(x)
		}
		if pos >= lo && pos <= hi {
			out = append(out, plot.Tick{Value: pos, Label: formatTick(x)})
		}
	}
	return out
}

// logTicks labels 1, 10, 100... and, over a short range, 2 and 5 (and 3)
// between them, with minor ticks at every integer multiple. lo and hi are
// log10 of the data range.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return nil
	}
	first, last := math.Floor(lo), math.Ceil(hi)
	labelled := []int{1}
	switch decades := last - first; {
	case decades <= 1:
		labelled = []int{1, 2, 3, 5}
	case decades <= 3:
		labelled = []int{1, 2, 5}
	}
	var out []plot.Tick
	for e := first; e <= last; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			pos := math.Log10(v)
			if pos < lo || pos > hi {
				continue
			}
			t := plot.Tick{Value: pos}
			if slices.Contains(labelled, m) {
				t.Label = formatTick(v)
			}
			out = append(out, t)
		}
	}
	return out
}

// ninesTicks labels a nines axis with percentiles.
type ninesTicks struct{}

func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	out := []plot.Tick{{Value: 0}, {Value: math.Log10(2), Label: "50%"}}
	for n := 1.0; n <= hi; n++ {
		out = append(out, plot.Tick{Value: n, Label: ninesLabel(int(n))})
	}
	return slices.DeleteFunc(out, func(t plot.Tick) bool { return t.Value < lo || t.Value > hi })
}

// ninesLabel names the percentile with n nines: 90%, 99%, 99.9%...
func ninesLabel(n int) string {
	if n == 1 {
		return "90%"
	}
	if n == 2 {
		return "99%"
	}
	return "99." + strings.Repeat("9", n-2) + "%"
}

// formatTick prints 3 significant digits, with k and M for large values.
func formatTick(v float64) string {
	suffix := ""
	switch {
	case v >= 1e6:
		v, suffix = v/1e6, "M"
	case v >= 1e4:
		v, suffix = v/1e3, "k"
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64) + suffix
}

// addMarkPlotters draws pn's fault marks under its lines: a translucent
// band over the fault's stretch, or a vertical line at an instant.
func addMarkPlotters(p *plot.Plot, pn *Panel) error {
	col := parseColor(markColor).(color.RGBA)
	lo, hi := pn.Y.fwd(pn.Y.Min), pn.Y.fwd(pn.Y.Max)
	for _, m := range pn.Marks {
		x0, x1 := pn.X.fwd(m.From), pn.X.fwd(m.To)
		if x1 > x0 {
			band, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: lo}, {X: x1, Y: lo}, {X: x1, Y: hi}, {X: x0, Y: hi}})
			if err != nil {
				return fmt.Errorf("mark %s: %w", m.Label, err)
			}
			band.Color = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0x30}
			band.LineStyle.Width = 0
			p.Add(band)
			continue
		}
		ln, err := plotter.NewLine(plotter.XYs{{X: x0, Y: lo}, {X: x0, Y: hi}})
		if err != nil {
			return fmt.Errorf("mark %s: %w", m.Label, err)
		}
		ln.LineStyle = draw.LineStyle{Color: col, Width: 1.2, Dashes: dashes[1]}
		p.Add(ln)
	}
	return nil
}

// addMarkLabels names the marks at the top of the data area, each a line
// lower than the one before so that neighbours do not overwrite each other.
func addMarkLabels(p *plot.Plot, pn *Panel) error {
	if len(pn.Marks) == 0 {
		return nil
	}
	var xys plotter.XYs
	var labels []string
	for i, m := range pn.Marks {
		xys = append(xys, plotter.XY{X: pn.X.fwd(m.From), Y: pn.Y.at(0.97 - 0.07*float64(i%6))})
		labels = append(labels, " "+m.Label)
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = 8
		lb.TextStyle[i].Color = color.RGBA{R: 0xa0, A: 0xff}
	}
	p.Add(lb)
	setAxis(&p.X, pn.X)
	setAxis(&p.Y, pn.Y)
	return nil
}
