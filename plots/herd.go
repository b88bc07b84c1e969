package plots

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
)

// HerdName is the file name (without extension) of a workload's headline
// figure: "lock-herd". The README and the report link it.
func HerdName(workload string) string { return safeName(workload + "-herd") }

// herdSides are the headline's two sides of the notification count, drawn
// solid and dashed.
var herdSides = []struct {
	fig  figures.Figure
	name string
	key  string
}{
	{figures.WatchEvents, "client side", "client side: notifications delivered"},
	{figures.ServerWatchEvents, "server side", "server side: notifications sent"},
}

// herd draws the headline figure of a workload: notifications per operation
// against clients, as the clients received them (solid) and as the servers
// sent them (dashed), the naive variants against the herd-free ones, a
// panel a backend, with a line of words a backend under the title giving
// both at the largest client count both measured. Baselines are left out
// (the fan-out figure has them); a workload with neither class shows every
// variant. Nil when no case counted notifications.
func (b *builder) herd() (*Chart, error) {
	hb := *b
	hb.order = slices.DeleteFunc(slices.Clone(b.order), func(s analysis.Series) bool {
		return s.Class != figures.Naive && s.Class != figures.HerdFree
	})
	if len(hb.order) == 0 {
		hb.order = b.order
	}
	fig := &Chart{
		Name:  HerdName(b.workload),
		Title: fmt.Sprintf("%s: the herd, notifications per %s", b.workload, b.unit),
		Caption: fmt.Sprintf("The headline: watch notifications per %s against clients (log-log), as the clients "+
			"received them (solid) and as the servers sent them (dashed), naive variants (every waiter watches one "+
			"thing) against herd-free ones (each watches its predecessor). A line that rises with clients is a herd; "+
			"a flat one is herd-free. The lines under the title give both at the largest client count both measured.", b.unit),
		Rows: 1, Cols: len(b.backends),
	}
	for _, s := range herdSides {
		fig.Keys = append(fig.Keys, Line{Label: s.key, Color: "#000000", Dash: len(fig.Keys)})
	}
	measured := false
	for _, kind := range b.backends {
		p := &Panel{
			Title: string(kind),
			X:     b.clientsAxis(),
			Y:     Axis{Label: "notifications per " + b.unit, Scale: Log},
		}
		for dash, s := range herdSides {
			lines, err := hb.sweepLines(kind, dash, s.name, value(s.fig))
			if err != nil {
				return nil, err
			}
			shareVariantLegend(lines, kind)
			p.Lines = append(p.Lines, lines...)
		}
		measured = measured || len(p.Lines) > 0
		slices.SortStableFunc(p.Lines, func(a, b Line) int { return analysis.CompareVariants(a.Class, a.Variant, b.Class, b.Variant) })
		fig.Panels = append(fig.Panels, p)
		if line := hb.herdWords(kind); line != "" {
			fig.Summary = append(fig.Summary, line)
		}
	}
	if !measured {
		return nil, nil
	}
	return fig, nil
}

// herdWords says the herd of backend kind in one line: at the largest
// client count that a naive and a herd-free variant both measured, the
// notifications per operation of the naive variant with the most against
// those of the herd-free variant with the fewest, each side, with the
// ratio. "" when the backend lacks either class.
func (b *builder) herdWords(kind backends.Kind) string {
	type point struct {
		variant string
		v       float64
	}
	at := func(class figures.Class, f figures.Figure, n int) []point {
		var out []point
		for _, s := range b.order {
			if s.Backend != kind || s.Class != class {
				continue
			}
			for _, c := range b.series[s] {
				if c.Clients != n {
					continue
				}
				if v, ok, err := c.Value(f); err == nil && ok {
					out = append(out, point{s.VariantLabel(), v})
				}
			}
		}
		return out
	}
	for i := len(b.clients) - 1; i >= 0; i-- {
		n := b.clients[i]
		var sides []string
		for _, s := range herdSides {
			naive, free := at(figures.Naive, s.fig, n), at(figures.HerdFree, s.fig, n)
			if len(naive) == 0 || len(free) == 0 {
				continue
			}
			worst := slices.MaxFunc(naive, func(a, b point) int { return cmp.Compare(a.v, b.v) })
			best := slices.MinFunc(free, func(a, b point) int { return cmp.Compare(a.v, b.v) })
			ratio := ""
			if best.v > 0 {
				ratio = " (" + herdNum(worst.v/best.v) + "×)"
			}
			sides = append(sides, fmt.Sprintf("%s: %s %s, %s %s%s", s.name,
				worst.variant, herdNum(worst.v), best.variant, herdNum(best.v), ratio))
		}
		if len(sides) > 0 {
			return fmt.Sprintf("%s at %d clients, notifications per %s — %s", kind, n, b.unit, strings.Join(sides, "; "))
		}
	}
	return ""
}

// herdNum prints a count per operation: whole from 100 up (1024, not the
// tick labels' 1020), else 3 significant digits.
func herdNum(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
