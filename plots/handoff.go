package plots

import (
	"fmt"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
)

// The colours of the handoff path's two parts.
const (
	notifyColor = "#4477aa"
	decideColor = "#ee6677"
)

// handoffPath draws where a lock's handoffs spend their time: for each
// variant whose handoffs were split (workloads.HandoffPath), a panel per
// backend with, at each client count, the p50 of the release to the
// grantee's watch event and of that event to the grant stacked, the
// handoff's own p50 over them, and the run's calibrated write + notify (one
// commit plus one notification), the floor of the first part. Nil when no
// case split its handoffs.
func (b *builder) handoffPath() (*Chart, error) {
	fig := &Chart{
		Name:  b.workload + "-handoff-path",
		Title: fmt.Sprintf("%s: where a handoff's time goes", b.workload),
		Caption: "Per variant and backend, at each client count: the p50 from a holder's release to the next holder's " +
			"watch event (blue) and from that event to its grant (red) stacked (p50s of each part: their sum is near the handoff's p50, not equal to it), the handoff's own p50 (black cross), and the " +
			"run's calibrated write + notify latency (dashed, triangles), one commit plus one notification: the floor of the first part.",
		Cols: len(b.backends),
	}
	ticks := make([]float64, len(b.clients))
	for i, n := range b.clients {
		ticks[i] = float64(n)
	}
	p50 := func(name figures.Latency) func(*analysis.Case) (float64, bool, error) {
		return value(figures.P50.ForLatency(name))
	}
	for _, s := range b.order {
		if s.Backend != b.backends[0] {
			continue
		}
		var row []*Panel
		any := false
		for _, kind := range b.backends {
			ks := s
			ks.Backend = kind
			cs := b.series[ks]
			p := &Panel{
				Title: fmt.Sprintf("%s — %s", kind, s.VariantLabel()),
				X:     Axis{Label: "clients (one session each)", Scale: Category, Ticks: ticks},
				Y:     Axis{Label: "p50 (ms)", Scale: Linear},
				Group: "variant " + s.VariantLabel(),
			}
			add := func(l Line, y func(*analysis.Case) (float64, bool, error)) error {
				l.Variant, l.Backend = s.VariantLabel(), string(kind)
				for _, c := range cs {
					v, ok, err := y(c)
					if err != nil {
						return err
					}
					if ok {
						l.Points = append(l.Points, Point{X: float64(c.Clients), Y: v})
					}
				}
				if len(l.Points) > 0 {
					p.Lines = append(p.Lines, l)
				}
				return nil
			}
			if err := add(Line{Label: "release to watch event", Color: notifyColor, Bar: true}, p50(figures.LatencyHandoffNotify)); err != nil {
				return nil, err
			}
			if len(p.Lines) == 0 {
				row = append(row, p)
				continue
			}
			any = true
			if err := add(Line{Label: "watch event to grant", Color: decideColor, Bar: true}, p50(figures.LatencyHandoffDecide)); err != nil {
				return nil, err
			}
			if err := add(Line{Label: "handoff", Color: "#000000", Glyph: "cross", Scatter: true}, p50(figures.LatencyHandoff)); err != nil {
				return nil, err
			}
			if floor := b.calibratedNotify(kind); floor > 0 {
				l := Line{Label: "calibrated write + notify", Color: "#000000", Dash: 1, Glyph: "triangle"}
				for _, n := range b.clients {
					l.Points = append(l.Points, Point{X: float64(n), Y: floor})
				}
				p.Lines = append(p.Lines, l)
			}
			row = append(row, p)
		}
		if any {
			fig.Panels = append(fig.Panels, row...)
			fig.Rows++
		}
	}
	if fig.Rows == 0 {
		return nil, nil
	}
	return fig, nil
}

// calibratedNotify is the calibrated write + notify latency of backend kind
// in milliseconds, from the first run of this workload that calibrated it;
// 0 when none did.
func (b *builder) calibratedNotify(kind backends.Kind) float64 {
	for _, r := range b.runs {
		if c := r.Calibration; c != nil && c.Backend == kind && c.NotifyLatency > 0 {
			return float64(c.NotifyLatency) / 1e6
		}
	}
	return 0
}
