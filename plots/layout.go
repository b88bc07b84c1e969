package plots

import (
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Sizes of a rendered figure, in points (PNG at 96 dpi: 4/3 pixels each).
// Everything else is measured: the canvas grows to hold its title, its
// legend and its footer, whatever their lengths.
const (
	panelW  vg.Length = 330
	panelH  vg.Length = 240
	margin  vg.Length = 8  // around the figure
	gap     vg.Length = 6  // between the title, panels, legend and footer
	leading vg.Length = 2  // between lines of text
	thumbW  vg.Length = 28 // a legend entry's sample of its style
	thumbGp vg.Length = 5  // between a sample and its text
	colGap  vg.Length = 16 // between legend columns
)

var (
	titleStyle   = textStyle(14, color.Black)
	warningStyle = textStyle(10, color.RGBA{R: 0xc0, A: 0xff})
	summaryStyle = textStyle(10, color.Black)
	legendStyle  = textStyle(10, color.Black)
	footerStyle  = textStyle(8, color.Gray{Y: 0x55})
)

func textStyle(size vg.Length, col color.Color) text.Style {
	return text.Style{
		Color:   col,
		Font:    font.From(plot.DefaultFont, size),
		Handler: plot.DefaultTextHandler,
	}
}

// textLine is one line of text laid out outside the panels: its top-left
// corner and its measured width.
type textLine struct {
	style text.Style
	at    vg.Point
	width vg.Length
	text  string
}

// legendEntry is one entry of a figure's legend.
type legendEntry struct {
	label  string
	thumbs []plot.Thumbnailer
}

// legendCell is an entry placed: the box its sample and text fill.
type legendCell struct {
	legendEntry
	box vg.Rectangle
}

// layout is where everything of a figure goes, in points from the
// bottom-left corner of a width x height canvas: the text around the
// panels, the panels' area and the legend's entries.
type layout struct {
	width, height vg.Length
	texts         []textLine
	grid          vg.Rectangle
	legend        []legendCell
}

// face is the font a style draws with, whose metrics place the text.
func face(s text.Style) *font.Face {
	fc := s.Handler.Cache().Lookup(s.Font, s.Font.Size)
	return &fc
}

// lineHeight is the height of one line of s: its ascent and descent.
func lineHeight(s text.Style) vg.Length {
	e := face(s).Extents()
	return e.Ascent + e.Descent
}

// wrap breaks txt at spaces into lines no wider than width where it can (a
// single word wider than width stays whole, and widens the canvas).
func wrap(s text.Style, txt string, width vg.Length) []string {
	if txt == "" {
		return nil
	}
	fc := face(s)
	var lines []string
	line := ""
	for _, w := range strings.Fields(txt) {
		if line != "" && fc.Width(line+" "+w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// cellAt is where packLegend puts an entry: its row, and its first column.
type cellAt struct{ row, col int }

// packLegend places entries of the given widths row by row in columns as
// wide as the widest entry that leaves room for a second column, as many
// as fit avail; an entry wider than a column spans as many as it needs
// (the client-bound mark's long label does not force one column on all).
func packLegend(widths []vg.Length, avail vg.Length) (at []cellAt, colW vg.Length) {
	for _, w := range widths {
		if w <= (avail-colGap)/2 {
			colW = max(colW, w)
		}
	}
	if colW == 0 {
		colW = avail
	}
	cols := max(1, int((avail+colGap)/(colW+colGap)))
	row, col := 0, 0
	for _, w := range widths {
		span := min(cols, max(1, int(math.Ceil(float64((w+colGap)/(colW+colGap))))))
		if col > 0 && col+span > cols {
			row, col = row+1, 0
		}
		at = append(at, cellAt{row, col})
		col += span
		if col >= cols {
			row, col = row+1, 0
		}
	}
	return at, colW
}

// layoutOf lays f out: the title (and warning, summary) on top, the panels,
// the legend under them in as many columns as fit, the footer at the
// bottom. The canvas is as wide as the panels, or wider where the title,
// a legend entry or a word needs it, and as tall as all of it.
func layoutOf(f *Chart) *layout {
	entries := legendOf(f)
	lfc := face(legendStyle)
	entryW := make([]vg.Length, len(entries))
	width := vg.Length(f.Cols) * panelW
	width = max(width, face(titleStyle).Width(f.Title)+2*margin)
	for i, e := range entries {
		entryW[i] = thumbW + thumbGp + lfc.Width(e.label)
		width = max(width, entryW[i]+2*margin)
	}

	type block struct {
		style  text.Style
		lines  []string
		center bool
	}
	avail := width - 2*margin
	var top, bottom []block
	top = append(top, block{titleStyle, []string{f.Title}, true})
	top = append(top, block{warningStyle, wrap(warningStyle, f.Warning, avail), true})
	for _, s := range f.Summary {
		top = append(top, block{summaryStyle, wrap(summaryStyle, s, avail), false})
	}
	for _, s := range f.Footer {
		bottom = append(bottom, block{footerStyle, wrap(footerStyle, s, avail), false})
	}
	height := func(bs []block) vg.Length {
		h := vg.Length(0)
		for _, b := range bs {
			h += vg.Length(len(b.lines)) * (lineHeight(b.style) + leading)
		}
		return h
	}
	for _, bs := range [][]block{top, bottom} {
		for _, b := range bs {
			for _, l := range b.lines {
				width = max(width, face(b.style).Width(l)+2*margin)
			}
		}
	}
	avail = width - 2*margin

	cells, colW := packLegend(entryW, avail)
	legendRows := 0
	if len(cells) > 0 {
		legendRows = cells[len(cells)-1].row + 1
	}
	entryH := lineHeight(legendStyle) + 3
	legendH := vg.Length(legendRows) * entryH
	gridH := vg.Length(f.Rows) * panelH
	topH, bottomH := height(top), height(bottom)

	lay := &layout{width: width}
	lay.height = margin + topH + gap + gridH + gap + legendH + gap + bottomH + margin
	place := func(bs []block, y vg.Length) {
		for _, b := range bs {
			fc := face(b.style)
			for _, l := range b.lines {
				w := fc.Width(l)
				x := margin
				if b.center {
					x = (width - w) / 2
				}
				lay.texts = append(lay.texts, textLine{style: b.style, at: vg.Point{X: x, Y: y}, width: w, text: l})
				y -= lineHeight(b.style) + leading
			}
		}
	}
	y := lay.height - margin
	place(top, y)
	y -= topH + gap
	lay.grid = vg.Rectangle{Min: vg.Point{X: margin / 2, Y: y - gridH}, Max: vg.Point{X: width - margin/2, Y: y}}
	y -= gridH + gap

	// Centre the legend by the width its entries use.
	used := vg.Length(0)
	for i, c := range cells {
		used = max(used, vg.Length(c.col)*(colW+colGap)+entryW[i])
	}
	x0 := (width - used) / 2
	for i, e := range entries {
		x := x0 + vg.Length(cells[i].col)*(colW+colGap)
		ty := y - vg.Length(cells[i].row)*entryH
		lay.legend = append(lay.legend, legendCell{legendEntry: e, box: vg.Rectangle{
			Min: vg.Point{X: x, Y: ty - entryH},
			Max: vg.Point{X: x + entryW[i], Y: ty},
		}})
	}
	y -= legendH + gap
	place(bottom, y)
	return lay
}

// drawChrome draws what lies around the panels: the texts of lay and the
// legend, each entry's sample left of its text.
func drawChrome(c vg.Canvas, lay *layout) {
	for _, t := range lay.texts {
		fillText(c, t.style, t.at, t.text)
	}
	fc := face(legendStyle)
	ext := fc.Extents()
	for _, cell := range lay.legend {
		top := cell.box.Max.Y - 1.5
		sample := &draw.Canvas{Canvas: c, Rectangle: vg.Rectangle{
			Min: vg.Point{X: cell.box.Min.X, Y: top - ext.Ascent - ext.Descent},
			Max: vg.Point{X: cell.box.Min.X + thumbW, Y: top},
		}}
		for _, t := range cell.thumbs {
			t.Thumbnail(sample)
		}
		fillText(c, legendStyle, vg.Point{X: cell.box.Min.X + thumbW + thumbGp, Y: top}, cell.label)
	}
}

// fillText draws one line of txt in s with its top-left corner at at. It
// places the baseline by the font's own ascent, so the text's box is known
// exactly: at.X to at.X + its width, at.Y down to at.Y - ascent - descent.
func fillText(c vg.Canvas, s text.Style, at vg.Point, txt string) {
	fc := face(s)
	c.SetColor(s.Color)
	c.FillString(*fc, vg.Point{X: at.X, Y: at.Y - fc.Extents().Ascent}, txt)
}

// legendOf lists f's legend: one entry a distinct label of its lines, in
// panel order, the client-bound and loaded marks after them, then the
// figure's Keys.
func legendOf(f *Chart) []legendEntry {
	var entries, marks []legendEntry
	seen := map[string]bool{}
	for _, p := range f.Panels {
		for _, ln := range p.Lines {
			if ln.Legend != "" {
				ln.Label, ln.Dash = ln.Legend, 0
			}
			if seen[ln.Label] {
				continue
			}
			seen[ln.Label] = true
			e := entryOf(ln)
			if isMark(ln.Label) {
				marks = append(marks, e)
				continue
			}
			entries = append(entries, e)
		}
	}
	entries = append(entries, marks...)
	for _, k := range f.Keys {
		entries = append(entries, entryOf(k))
	}
	return entries
}

func entryOf(ln Line) legendEntry {
	line, glyph := styles(ln)
	if ln.Bar {
		return legendEntry{ln.Label, []plot.Thumbnailer{&plotter.BarChart{Color: line.Color}}}
	}
	var thumbs []plot.Thumbnailer
	if !ln.Scatter {
		thumbs = append(thumbs, &plotter.Line{LineStyle: line})
	}
	if glyph.Shape != nil {
		thumbs = append(thumbs, &plotter.Scatter{GlyphStyle: glyph})
	}
	return legendEntry{ln.Label, thumbs}
}
