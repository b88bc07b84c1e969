package report

import (
	"fmt"
	"strings"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// watchers adds, for config workload runs, how many watchers of a config
// of each measured size the cluster updates within the target (every
// client has an update within target at the 99th percentile), and what
// each measured point cost.
func (d *Document) watchers(runs []*results.Run, t analysis.Target) {
	wcs := analysis.WatcherCapacities(runs, t.P99)
	if len(wcs) == 0 {
		return
	}
	d.add(Heading{3, "Watchers of a config updated within the target"})
	d.add(Para{Text: fmt.Sprintf("How many watchers of a config of a given size the cluster brings to each update, "+
		"the last of them within p99 ≤ %s ms (from the start of the write until the last client has that version or a "+
		"newer one: histogram propagate_last_start; files from before it was kept count from the write's reply). "+
		"The answer is a measured count: the largest that met the target, and the next measured one that missed it; "+
		"nothing is interpolated between them. Client-bound cases and cases on a loaded machine are left out.", ms(wcs[0].Target))})
	tab := Table{Header: []string{"backend", "variant", "size", "watchers within target", "measured: clients → last p99 ms"}}
	for _, wc := range wcs {
		var pts []string
		for _, p := range wc.Points {
			pts = append(pts, fmt.Sprintf("%d → %s%s", p.Clients, ms(p.LastP99), pointFlag(p)))
		}
		tab.Rows = append(tab.Rows, []string{string(wc.Backend), wc.Variant, figures.FormatSize(wc.Size), wc.Text(), strings.Join(pts, "; ")})
	}
	d.add(tab)
	d.add(Para{Text: "Each measured point, per update: each client's propagation (p50, p99, p99.9 from the write's start), " +
		"until the last client (p99), notifications and bytes client | server side, the servers' CPU, the servers' live " +
		"heap per watching client (after a forced collection, before the interval; — where it cannot be read: the " +
		"embedded etcd, containers), the clients that skipped the version, and sessions lost."})
	pt := Table{Header: []string{"backend", "variant", "size", "clients", "p50 ms", "p99 ms", "p99.9 ms", "last p99 ms",
		"notifications cli | srv", "bytes cli | srv", "server CPU ms", "heap/watcher B", "skipped", "lost"}}
	for _, wc := range wcs {
		for _, p := range wc.Points {
			pt.Rows = append(pt.Rows, []string{string(wc.Backend), wc.Variant, figures.FormatSize(wc.Size), fmt.Sprint(p.Clients) + pointFlag(p),
				ms(p.P50), ms(p.P99), ms(p.P999), ms(p.LastP99),
				Num(p.Notifications) + " | " + Num(p.ServerNotifications), Num(p.BytesPerUpdate) + " | " + Num(p.ServerBytesPerUpdate),
				orDash(p.ServerCPUPerUpdate * 1000), orDash(p.HeapPerWatcher), Num(p.Skipped), fmt.Sprint(p.SessionsLost)})
		}
	}
	d.add(pt)
}

// pointFlag marks a point left out of the answer.
func pointFlag(p analysis.WatcherPoint) string {
	switch {
	case strings.HasPrefix(p.ClientBound, "loaded machine"):
		return " (loaded machine)"
	case p.ClientBound != "":
		return " (client-bound)"
	}
	return ""
}

// orDash is v, or NotMeasured for a figure not measured (0).
func orDash(v float64) string {
	if v == 0 {
		return NotMeasured
	}
	return Num(v)
}
