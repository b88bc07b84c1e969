package report

import (
	"fmt"
	"strings"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// watchers adds, for config workload runs, how many watchers of a config
// of each measured size the cluster updates within the target: every
// client has an update within target at the 99th percentile.
func (d *Document) watchers(runs []*results.Run, t analysis.Target) {
	wcs := analysis.WatcherCapacities(runs, t.P99)
	if len(wcs) == 0 {
		return
	}
	d.add(Heading{3, "Watchers of a config updated within the target"})
	d.add(Para{Text: fmt.Sprintf("How many watchers of a config of a given size the cluster brings to each update, "+
		"the last of them within p99 ≤ %s ms (histogram propagate_last: from the write's commit until the last client "+
		"has that version or a newer one). Interpolated on log-log axes between the last measured count that met the target "+
		"and the first that did not; client-bound cases are left out. Bytes are what the clients received per update.", ms(wcs[0].Target))})
	tab := Table{Header: []string{"backend", "variant", "size", "watchers within target", "measured: clients → last p99 ms, bytes/update"}}
	for _, wc := range wcs {
		pts := ""
		for i, p := range wc.Points {
			if i > 0 {
				pts += "; "
			}
			pts += fmt.Sprintf("%d → %s, %s B", p.Clients, ms(p.LastP99), Num(p.BytesPerUpdate))
			switch {
			case strings.HasPrefix(p.ClientBound, "loaded machine"):
				pts += " (loaded machine)"
			case p.ClientBound != "":
				pts += " (client-bound)"
			}
		}
		tab.Rows = append(tab.Rows, []string{string(wc.Backend), wc.Variant, figures.FormatSize(wc.Size), wc.Text(), pts})
	}
	d.add(tab)
}
