package plots

import (
	"fmt"
	"math"
	"strings"

	"github.com/zkbench/zkbench/analysis"
)

// uslSamples is how many points draw a fitted curve.
const uslSamples = 40

// usl draws each variant's measured throughput (one point per repeat of
// each closed-loop, not client-bound case) with its fitted Universal
// Scalability Law over the measured range (analysis.FitUSLs); nil when no
// variant has a fit.
func (b *builder) usl() (*Chart, error) {
	fits := analysis.FitUSLs(b.runs)
	fig := &Chart{
		Name:  b.workload + "-usl",
		Title: fmt.Sprintf("%s: throughput and its Universal Scalability Law fit", b.workload),
		Caption: "Points: measured throughput of each closed-loop case without think time that was neither client-bound nor on a loaded machine (one per repeat). " +
			"Line: X(N) = λN / (1 + σ(N−1) + κN(N−1)) fitted by least squares on log throughput, drawn over the " +
			"measured range. κ (coherency, crosstalk) is how herd-prone the variant is; the legend gives σ and κ. " +
			"With three client counts the curve passes through them whatever the truth.",
		Rows: 1, Cols: len(b.backends),
	}
	any := false
	var noFit []string
	for _, kind := range b.backends {
		p := &Panel{Title: string(kind), X: b.clientsAxis(), Y: Axis{Label: b.unit + "s per second", Scale: Log}}
		for _, f := range fits {
			if f.Backend != kind {
				continue
			}
			color := b.st.variant[f.VariantLabel()]
			pts := Line{Label: lineLabel(f.VariantLabel(), kind, "measured"), Legend: "", Variant: f.VariantLabel(), Backend: string(kind),
				Color: color, Glyph: glyphOf(kind), Scatter: true}
			for i := range f.N {
				pts.Points = append(pts.Points, Point{X: f.N[i], Y: f.X[i]})
			}
			if len(pts.Points) > 0 {
				p.Lines = append(p.Lines, pts)
			}
			if f.Err != "" {
				// Said in the caption: a note this long inside the panel
				// would squeeze its data area to nothing.
				noFit = append(noFit, fmt.Sprintf("%s on %s: %s", f.VariantLabel(), kind, f.Err))
				continue
			}
			u := f.USL
			label := fmt.Sprintf("%s USL σ %s κ %s", f.VariantLabel(), param(u.Sigma), param(u.Kappa))
			if !u.Exact {
				label += fmt.Sprintf(" [%s, %s]", param(u.KappaCI[0]), param(u.KappaCI[1]))
			}
			curve := Line{Label: label, Variant: f.VariantLabel(), Backend: string(kind), Color: color, Dash: 1}
			lo, hi := math.Log(u.MinN), math.Log(u.MaxN)
			for i := range uslSamples {
				n := math.Exp(lo + (hi-lo)*float64(i)/(uslSamples-1))
				curve.Points = append(curve.Points, Point{X: n, Y: u.At(n)})
			}
			p.Lines = append(p.Lines, curve)
			any = true
		}
		fig.Panels = append(fig.Panels, p)
	}
	if !any {
		return nil, nil
	}
	if len(noFit) > 0 {
		fig.Caption += " No fit: " + strings.Join(noFit, "; ") + "."
	}
	return fig, nil
}

// param prints a fitted parameter with 2 significant digits, and one the
// fit drove to its bound (below 1e-9) as 0.
func param(v float64) string {
	if math.Abs(v) < 1e-9 {
		return "0"
	}
	return fmt.Sprintf("%.2g", v)
}
