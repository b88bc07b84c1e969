package summary

import "time"

// Figure is one number that describes a case, with the label and unit a
// reader sees. Report tables and comparisons are built from Figures so that
// both print the same thing under the same name.
type Figure struct {
	// ID is stable and short: "throughput", "p99", "watch_events/op".
	ID string
	// Label and Unit are for readers: "p99 acquire", "ms".
	Label string
	Unit  string
	// Value reads the figure; false when the case did not measure it.
	Value func(c *Case) (float64, bool, error)
}

// Figures returns the figures that summarise a case of workload whose
// primary latency histogram is latency ("" for none): throughput, p50, p99
// and p99.9 of that latency, then the per-operation counts, client side and
// server side.
func Figures(workload, latency string) []Figure {
	unit := OpUnit(workload)
	out := []Figure{{
		ID: "throughput", Label: "throughput", Unit: unit + "s/s",
		Value: func(c *Case) (float64, bool, error) { v, ok := c.Throughput(); return v, ok, nil },
	}}
	if latency != "" {
		for _, p := range []struct {
			id string
			q  float64
		}{{"p50", 50}, {"p99", 99}, {"p99.9", 99.9}} {
			out = append(out, Figure{
				ID: p.id, Label: p.id + " " + latency, Unit: "ms",
				Value: func(c *Case) (float64, bool, error) {
					d, ok, err := c.Quantile(latency, p.q)
					return Millis(d), ok, err
				},
			})
		}
	}
	perOp := func(name, label string) Figure {
		return Figure{
			ID: name + "/op", Label: label, Unit: "per " + unit,
			Value: func(c *Case) (float64, bool, error) { v, ok := c.PerOp(name); return v, ok, nil },
		}
	}
	return append(out,
		perOp("watch_events", "watch events (client)"),
		perOp("server_watch_events", "watch events (server)"),
		perOp("wasted_wakeups", "wasted wake-ups"),
		perOp("requests", "requests (client)"),
		perOp("server_requests", "requests (server)"),
		perOp("server_writes", "writes (server)"),
		perOp("server_reads", "reads (server)"),
	)
}

// Millis converts d to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
