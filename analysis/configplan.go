package analysis

// PredictConfig answers an operator's question about a config center — W
// watchers of a config of S bytes, updated R times a second — from kept
// config sweeps (runs of the config workload at several watcher counts
// and sizes): how long until the last watcher has an update, the server's
// notifications, bytes and CPU per second, and what saturates first.
//
// The model: an update's delivery to every watcher is one fan-out the
// server makes before the next update when the writer's period is longer
// than the fan-out, so at a fan-out utilisation (rate × mean time until
// the last watcher has it) at or below MaxPlanUtilisation updates do not
// meet, and each one's propagation is what the sweeps measured at (W, S,
// R), read off the measured cases: between the two nearest watcher counts
// on log-log axes, between the two nearest sizes linearly, between the two
// nearest rates on log-log axes (configGrid). The per-update counts are
// read the same way and multiplied by the rate.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// ModeConfig is the way of predicting a config center (modelerror.md's
// row for it).
const ModeConfig = "config"

// ConfigAsk is an operator's config center for PredictConfig.
type ConfigAsk struct {
	// Workload names the fan-out workload in the runs ("config").
	Workload string `json:"workload"`
	// Backend may be empty when the runs hold one backend.
	Backend  backends.Kind `json:"backend"`
	Variant  string        `json:"variant"`
	Watchers int           `json:"watchers"`
	// Size is the config's bytes; Rate its updates per second.
	Size int     `json:"size"`
	Rate float64 `json:"rate"`
	// Percentile (50 or 99) and Bound: the target, propagation to the
	// last watcher at Percentile ≤ Bound.
	Percentile float64       `json:"percentile"`
	Bound      time.Duration `json:"bound_ns"`
}

// ConfigPoint is one measured config case the model reads.
type ConfigPoint struct {
	Run      string  `json:"run"`
	Case     string  `json:"case"`
	Watchers int     `json:"watchers"`
	Size     int     `json:"size"`
	Rate     float64 `json:"rate"`
	Mode     string  `json:"cluster_mode"`
	Poll     string  `json:"poll"`
	// Servers are the run's server and connection settings (nodes,
	// conns, step timeout), which one grid and its validation share.
	Servers ConfigServers `json:"servers"`
	ConfigLast
	ConfigCounts
	CPUs int `json:"cpus"`
}

// ConfigLast is the propagation until the last watcher had an update,
// from the write's start: its p50, p99 and mean, with each percentile's
// 90% interval from the number of updates measured (a point's), or read
// off the basis (a prediction's).
type ConfigLast struct {
	LastP50     time.Duration    `json:"last_p50_ns"`
	LastP99     time.Duration    `json:"last_p99_ns"`
	LastMean    time.Duration    `json:"last_mean_ns"`
	LastP50Span [2]time.Duration `json:"last_p50_interval_ns"`
	LastP99Span [2]time.Duration `json:"last_p99_interval_ns"`
}

// ConfigCounts are a config case's counts per update: the servers'
// notifications, bytes sent and CPU seconds (0: not measured), and the
// clients' notifications.
type ConfigCounts struct {
	ServerNotifications float64 `json:"server_notifications_per_update"`
	ServerBytes         float64 `json:"server_bytes_per_update"`
	ServerCPU           float64 `json:"server_cpu_seconds_per_update"`
	ClientNotifications float64 `json:"client_notifications_per_update"`
}

// configCPU is the server CPU's load figure.
const configCPU = "server CPU s/s"

// configLoads are the load figures a config plan predicts and validates,
// each a count per update times the updates a second (the CPU is read
// apart: configGrid.cpu).
var configLoads = []countFigure[ConfigCounts]{
	{"notifications/s (server)", func(c ConfigCounts) float64 { return c.ServerNotifications }},
	{"notifications/s (client)", func(c ConfigCounts) float64 { return c.ClientNotifications }},
	{"bytes/s (server)", func(c ConfigCounts) float64 { return c.ServerBytes }},
	{configCPU, func(c ConfigCounts) float64 { return c.ServerCPU }},
}

// ConfigServers are a config run's server and connection settings.
type ConfigServers struct {
	Nodes       string `json:"nodes"`
	Conns       string `json:"conns"`
	StepTimeout string `json:"step_timeout"`
}

// ConfigLoad is one predicted load figure.
type ConfigLoad struct {
	Figure    string  `json:"figure"`
	PerUpdate float64 `json:"per_update"`
	PerSec    float64 `json:"per_sec"`
}

// ConfigPrediction answers PredictConfig for one variant.
type ConfigPrediction struct {
	Ask     ConfigAsk     `json:"ask"`
	Backend backends.Kind `json:"backend"`
	// Basis are the measured points the figures were read from;
	// Extrapolated says where the point lies outside them.
	Basis        []ConfigPoint `json:"basis"`
	Extrapolated string        `json:"extrapolated,omitempty"`
	ConfigLast
	// Utilisation is Rate × LastMean: the share of the writer's period
	// one update's fan-out takes.
	Utilisation float64      `json:"fanout_utilisation"`
	Load        []ConfigLoad `json:"load"`
	Resources   []Resource   `json:"resources"`
	// Meets says whether the target holds; MaxWatchers is the most
	// watchers that meet it at this size and rate, searched up to
	// SearchedTo.
	Meets        bool `json:"meets"`
	MaxWatchers  int  `json:"max_watchers"`
	SearchedFrom int  `json:"searched_from"`
	SearchedTo   int  `json:"searched_to"`
	// Mode and Poll are the basis's cluster mode and poll interval, which
	// a validation run takes.
	Mode    string        `json:"cluster_mode"`
	Poll    string        `json:"poll"`
	Servers ConfigServers `json:"servers"`
}

// ConfigAnswer is a config plan: the asked variant and every other
// watching variant of the backend at the same point.
type ConfigAnswer struct {
	Asked  *ConfigPrediction   `json:"asked"`
	Others []*ConfigPrediction `json:"others,omitempty"`
	// Left are measured cases the model did not read, with why.
	Left []string `json:"left_out,omitempty"`
}

// configPoints reads the usable config cases of runs, by backend and
// variant, and lists the others with why they were left out.
func configPoints(runs []*results.Run, workload string) (map[backends.Kind]map[string][]ConfigPoint, []string, error) {
	return planPoints(runs, workload, func(run *results.Run, r *results.Result, key string) (ConfigPoint, string, error) {
		size, err := strconv.Atoi(run.Config.Params["size"])
		if err != nil {
			return ConfigPoint{}, "no config size", nil
		}
		last, ok, err := lastOf(r)
		if err != nil || !ok {
			return ConfigPoint{}, "no propagation counted from the write's start (run before zkbench kept it)", err
		}
		return ConfigPoint{Run: run.ID, Case: key, Watchers: r.Clients, Size: size, Rate: updateRate(run, r),
			Mode: run.ClusterMode, Poll: run.Config.Params["poll"], Servers: configServers(run),
			ConfigLast: last, ConfigCounts: countsOf(r), CPUs: run.Environment.CPUs}, "", nil
	})
}

// updateRate is the rate a config run's writer kept: its --rate, or, for a
// run made without one (the workload's default), the updates it made a
// second.
func updateRate(run *results.Run, r *results.Result) float64 {
	if run.Config.Rate > 0 {
		return run.Config.Rate
	}
	return r.Throughput
}

// lastOf is r's propagation to the last watcher from the write's start;
// false when r did not record it.
func lastOf(r *results.Result) (ConfigLast, bool, error) {
	h, ok, err := recorded(r, figures.LatencyPropagateLastStart)
	if !ok {
		return ConfigLast{}, false, err
	}
	return ConfigLast{LastP50: time.Duration(h.ValueAtQuantile(50)), LastP99: time.Duration(h.ValueAtQuantile(99)), LastMean: time.Duration(h.Mean()),
		LastP50Span: percentileSpan(h, 50), LastP99Span: percentileSpan(h, 99)}, true, nil
}

// percentileSpan is the 90% interval of h's q-th percentile from the
// number of samples n: the values at the ranks q ± 1.645·sqrt(q(1−q)/n).
func percentileSpan(h *hdrhistogram.Histogram, q float64) [2]time.Duration {
	p := q / 100
	d := 1.645 * math.Sqrt(p*(1-p)/float64(h.TotalCount()))
	return [2]time.Duration{time.Duration(h.ValueAtQuantile(100 * max(0, p-d))), time.Duration(h.ValueAtQuantile(100 * min(1, p+d)))}
}

// countsOf is r's counts per update.
func countsOf(r *results.Result) ConfigCounts {
	c := ConfigCounts{ServerNotifications: r.PerOp[figures.ServerWatchEvents.Key], ServerBytes: r.PerOp[figures.ServerBytesSent.Key],
		ClientNotifications: r.PerOp[figures.WatchEvents.Key]}
	if r.Cost.ServerCostMeasured && r.Ops.Succeeded > 0 {
		c.ServerCPU = r.Cost.ServerCPUSeconds / float64(r.Ops.Succeeded)
	}
	return c
}

// configServers are run's server and connection settings.
func configServers(run *results.Run) ConfigServers {
	p := run.Config.Params
	return ConfigServers{Nodes: p["nodes"], Conns: p["conns"], StepTimeout: p["step_timeout"]}
}

// PredictConfig answers ask from the config runs among runs.
func PredictConfig(runs []*results.Run, ask ConfigAsk) (*ConfigAnswer, error) {
	switch {
	case ask.Watchers < 1:
		return nil, errors.New("give --clients, the number of watchers")
	case ask.Size < 1:
		return nil, errors.New("give --size, the config's bytes (e.g. 1KB, 64KB)")
	case !(ask.Rate > 0) || math.IsInf(ask.Rate, 0):
		return nil, errors.New("give --rate, the config's updates per second (a positive number)")
	case ask.Percentile != 50 && ask.Percentile != 99:
		return nil, fmt.Errorf("--target p%s: a config plan holds the p50 or the p99 of propagation to the last watcher (p50=..., p99=...)", num(ask.Percentile))
	}
	points, left, err := configPoints(runs, ask.Workload)
	if err != nil {
		return nil, err
	}
	if len(points) == 0 {
		why := ""
		if len(left) > 0 {
			why = "; left out: " + strings.Join(left, "; ")
		}
		return nil, fmt.Errorf("%w: no usable config case of workload %s in these runs (make bench-plan-config keeps sweeps)%s", ErrNoData, ask.Workload, why)
	}
	if ask.Backend == "" {
		if len(points) != 1 {
			return nil, fmt.Errorf("give --backend: the runs hold config cases of %s", strings.Join(slices.Sorted(func(yield func(string) bool) {
				for k := range points {
					if !yield(string(k)) {
						return
					}
				}
			}), " and "))
		}
		for k := range points {
			ask.Backend = k
		}
	}
	byVariant := points[ask.Backend]
	if len(byVariant[ask.Variant]) == 0 {
		var have []string
		for v := range byVariant {
			have = append(have, v)
		}
		slices.Sort(have)
		return nil, fmt.Errorf("%w: no usable config case of %s %s (variants measured: %s)", ErrNoData, ask.Backend, ask.Variant, cmp.Or(strings.Join(have, ", "), "none"))
	}
	if !watches(byVariant[ask.Variant]) {
		return nil, fmt.Errorf("--variant %s: neither its servers nor its clients counted a notification in the measured cases, so it watches nothing: the plan models a watch's fan-out "+
			"(a polling variant's propagation and load follow its poll interval, not the updates; the kept config runs measure it)", ask.Variant)
	}
	asked, err := predictConfig(byVariant[ask.Variant], ask)
	if err != nil {
		return nil, err
	}
	ans := &ConfigAnswer{Asked: asked, Left: left}
	var others []string
	for v, pts := range byVariant {
		if v != ask.Variant && watches(pts) {
			others = append(others, v)
		}
	}
	slices.Sort(others)
	for _, v := range others {
		a := ask
		a.Variant = v
		if p, err := predictConfig(byVariant[v], a); err == nil {
			ans.Others = append(ans.Others, p)
		} else {
			ans.Left = append(ans.Left, fmt.Sprintf("variant %s: %v", v, err))
		}
	}
	return ans, nil
}

// watches says whether a variant's servers sent notifications: it
// watches, so its updates fan out.
func watches(pts []ConfigPoint) bool {
	return slices.ContainsFunc(pts, func(p ConfigPoint) bool { return p.ServerNotifications > 0 || p.ClientNotifications > 0 })
}

// predictConfig predicts ask from one variant's points.
func predictConfig(pts []ConfigPoint, ask ConfigAsk) (*ConfigPrediction, error) {
	mode, poll, srv := pts[0].Mode, pts[0].Poll, pts[0].Servers
	for _, p := range pts[1:] {
		switch {
		case p.Mode != mode:
			return nil, fmt.Errorf("the config runs of %s %s ran on %s and %s servers: give runs of one kind", ask.Backend, ask.Variant, mode, p.Mode)
		case p.Servers != srv:
			return nil, fmt.Errorf("the config runs of %s %s ran with different servers or connections (run %s: %+v, run %s: %+v): give runs made alike",
				ask.Backend, ask.Variant, pts[0].Run, srv, p.Run, p.Servers)
		}
	}
	g, err := newConfigGrid(pts, ask.Watchers, ask.Size, ask.Rate)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", ask.Backend, ask.Variant, err)
	}
	p := &ConfigPrediction{Ask: ask, Backend: ask.Backend, Basis: g.basis, Extrapolated: g.extrapolated, Mode: mode, Poll: poll, Servers: srv}
	p.LastP50, p.LastP99, p.LastMean = g.dur(ask.Watchers, func(c ConfigLast) time.Duration { return c.LastP50 }),
		g.dur(ask.Watchers, func(c ConfigLast) time.Duration { return c.LastP99 }), g.dur(ask.Watchers, func(c ConfigLast) time.Duration { return c.LastMean })
	for i := range 2 {
		p.LastP50Span[i] = g.dur(ask.Watchers, func(c ConfigLast) time.Duration { return c.LastP50Span[i] })
		p.LastP99Span[i] = g.dur(ask.Watchers, func(c ConfigLast) time.Duration { return c.LastP99Span[i] })
	}
	p.Utilisation = ask.Rate * p.LastMean.Seconds()
	for _, l := range configLoads {
		if l.figure == configCPU {
			continue // read apart below
		}
		if per := g.at(ask.Watchers, func(c ConfigPoint) float64 { return l.of(c.ConfigCounts) }); per > 0 {
			p.Load = append(p.Load, ConfigLoad{Figure: l.figure, PerUpdate: per, PerSec: per * ask.Rate})
		}
	}
	if p.LastMean > 0 {
		p.Resources = append(p.Resources, Resource{Name: "fan-out (every watcher has an update before the next)", Capacity: 1 / p.LastMean.Seconds(),
			Source: Source{Kind: "derived", What: fmt.Sprintf("1 / mean propagation to the last watcher %s ms", num(Millis(p.LastMean)))}})
	}
	if idle, perUpdate, what, ok := g.cpu(ask.Watchers); ok {
		p.Load = append(p.Load, ConfigLoad{Figure: configCPU, PerUpdate: perUpdate, PerSec: idle + perUpdate*ask.Rate})
		if free := float64(g.cpus) - idle; g.cpus > 0 && free > 0 {
			p.Resources = append(p.Resources, Resource{Name: fmt.Sprintf("server CPU (%d cores)", g.cpus), Capacity: free / perUpdate,
				Source: Source{Kind: "derived", What: fmt.Sprintf("(%d cores − %s s/s %s) / %s CPU seconds an update", g.cpus, num(idle), what, num(perUpdate))}})
		}
	}
	if len(p.Resources) == 0 {
		return nil, fmt.Errorf("%s %s: the basis measured neither a propagation nor the servers' CPU: no capacity to give", ask.Backend, ask.Variant)
	}
	for i := range p.Resources {
		p.Resources[i].Share = ask.Rate / p.Resources[i].Capacity
	}
	slices.SortStableFunc(p.Resources, func(a, b Resource) int { return cmp.Compare(a.Capacity, b.Capacity) })
	p.Meets = p.meets(p.LastP50, p.LastP99, p.Utilisation)
	p.MaxWatchers, p.SearchedFrom, p.SearchedTo = g.maxWatchers(p), g.minW, g.maxW
	return p, nil
}

// meets holds the target against one point's propagation and utilisation:
// an update must reach the last watcher before the next.
func (p *ConfigPrediction) meets(p50, p99 time.Duration, util float64) bool {
	d := p99
	if p.Ask.Percentile == 50 {
		d = p50
	}
	return d <= p.Ask.Bound && util < 1
}

// configGrid reads a figure at a watcher count off one variant's points:
// at each of the one or two measured rates nearest the asked one, at each
// of the one or two sizes nearest the asked one measured there, between
// the two nearest watcher counts on log-log axes; then between the sizes
// linearly (an update's bytes grow with its size) and between the rates
// on log-log axes (a server and clients that sleep between updates pay
// wake-ups a busy one does not, so the rate matters even where updates
// do not meet).
type configGrid struct {
	rate         float64
	size         int
	rates        []rateLayer // one or two
	basis        []ConfigPoint
	extrapolated string
	cpus         int
	// minW and maxW bound the watcher counts the grid reads: half the
	// smallest and twice the largest measured.
	minW, maxW int
}

// rateLayer is the points measured at one rate, by size.
type rateLayer struct {
	rate  float64
	sizes [][]ConfigPoint // one or two sizes, each ≥ 2 watcher counts, by watchers
}

func newConfigGrid(pts []ConfigPoint, watchers, size int, rate float64) (*configGrid, error) {
	type at struct {
		rate float64
		size int
	}
	cells := map[at][]ConfigPoint{}
	for _, p := range pts {
		k := at{p.Rate, p.Size}
		// Of two cases at one point, the later run's.
		if i := slices.IndexFunc(cells[k], func(q ConfigPoint) bool { return q.Watchers == p.Watchers }); i >= 0 {
			cells[k][i] = p
		} else {
			cells[k] = append(cells[k], p)
		}
	}
	bySize := map[float64]map[int][]ConfigPoint{}
	for k, ps := range cells {
		if len(ps) < 2 {
			continue
		}
		slices.SortFunc(ps, func(a, b ConfigPoint) int { return cmp.Compare(a.Watchers, b.Watchers) })
		if bySize[k.rate] == nil {
			bySize[k.rate] = map[int][]ConfigPoint{}
		}
		bySize[k.rate][k.size] = ps
	}
	if len(bySize) == 0 {
		return nil, errors.New("no config size measured at two watcher counts or more: sweep --clients (e.g. 10,40,160)")
	}
	g := &configGrid{rate: rate, size: size, maxW: math.MaxInt}
	var note []string
	rates := slices.Sorted(maps.Keys(bySize))
	ri, rj, out := bracket(rates, rate)
	if out == "beyond" {
		return nil, beyondf("%s updates/s is beyond %vx the measured rates (%s to %s updates/s): measure nearer it", num(rate), MaxExtrapolation, num(rates[0]), num(rates[len(rates)-1]))
	}
	if out != "" {
		note = append(note, fmt.Sprintf("%s updates/s %s the measured rates (%s to %s)", num(rate), out, num(rates[0]), num(rates[len(rates)-1])))
	}
	for _, r := range unique(rates[ri], rates[rj]) {
		sizes := slices.Sorted(maps.Keys(bySize[r]))
		fs := make([]float64, len(sizes))
		for i, s := range sizes {
			fs[i] = float64(s)
		}
		si, sj, out := bracket(fs, float64(size))
		if out == "beyond" {
			return nil, beyondf("config size %d bytes is beyond %vx the sizes measured at %s updates/s (%d to %d bytes, each at two watcher counts or more): measure nearer it",
				size, MaxExtrapolation, num(r), sizes[0], sizes[len(sizes)-1])
		}
		if out != "" {
			note = append(note, fmt.Sprintf("size %d bytes %s the %d to %d measured at %s updates/s", size, out, sizes[0], sizes[len(sizes)-1], num(r)))
		}
		layer := rateLayer{rate: r}
		for _, s := range unique(sizes[si], sizes[sj]) {
			ps := bySize[r][s]
			lo, hi := ps[0].Watchers, ps[len(ps)-1].Watchers
			if watchers*int(MaxExtrapolation) < lo || watchers > hi*int(MaxExtrapolation) {
				return nil, beyondf("%d watchers is beyond %vx the watcher counts measured at %d bytes and %s updates/s (%d to %d): measure nearer it",
					watchers, MaxExtrapolation, s, num(r), lo, hi)
			}
			if n := fmt.Sprintf("%d watchers outside the %d to %d measured", watchers, lo, hi); (watchers < lo || watchers > hi) && !slices.Contains(note, n) {
				note = append(note, n)
			}
			layer.sizes = append(layer.sizes, ps)
			g.maxW = min(g.maxW, int(MaxExtrapolation)*hi)
			g.minW = max(g.minW, (lo+int(MaxExtrapolation)-1)/int(MaxExtrapolation))
			a, b := nearestTwo(ps, watchers)
			g.basis = append(g.basis, ps[a], ps[b])
			for _, p := range ps {
				if p.CPUs > 0 && (g.cpus == 0 || p.CPUs < g.cpus) {
					g.cpus = p.CPUs
				}
			}
		}
		g.rates = append(g.rates, layer)
	}
	if len(note) > 0 {
		g.extrapolated = "EXTRAPOLATED: " + strings.Join(note, "; ")
	}
	return g, nil
}

// ErrBeyondBasis: the asked point lies further than MaxExtrapolation
// beyond the measured ones (errors.Is).
var ErrBeyondBasis = errors.New("analysis: beyond the measured points")

// beyondError is an error of ErrBeyondBasis with its own words.
type beyondError struct{ msg string }

func (e beyondError) Error() string        { return e.msg }
func (e beyondError) Is(target error) bool { return target == ErrBeyondBasis }

// beyondf is a beyondError.
func beyondf(format string, a ...any) error { return beyondError{fmt.Sprintf(format, a...)} }

// bracket finds the two values of sorted xs around x (the same one twice
// when x is one of them or xs has one value; the two nearest at an end),
// and says "outside" when x lies beyond them within MaxExtrapolation,
// "beyond" when further.
func bracket(xs []float64, x float64) (int, int, string) {
	i, found := slices.BinarySearch(xs, x)
	out := ""
	switch {
	case found:
		return i, i, ""
	case x*MaxExtrapolation < xs[0] || x > xs[len(xs)-1]*MaxExtrapolation:
		out = "beyond"
	case i == 0 || i == len(xs):
		out = "outside"
	}
	switch {
	case len(xs) == 1:
		return 0, 0, out
	case i == 0:
		return 0, 1, out
	case i == len(xs):
		return i - 2, i - 1, out
	}
	return i - 1, i, out
}

// unique is a, then b if it differs.
func unique[T comparable](a, b T) []T {
	if a == b {
		return []T{a}
	}
	return []T{a, b}
}

// nearestTwo are the indices of the two points around w (or the two
// nearest it at an end), ps sorted by watchers.
func nearestTwo(ps []ConfigPoint, w int) (int, int) {
	i := slices.IndexFunc(ps, func(p ConfigPoint) bool { return p.Watchers >= w })
	switch {
	case i < 0:
		return len(ps) - 2, len(ps) - 1
	case i == 0:
		return 0, 1
	}
	return i - 1, i
}

// at reads f at w watchers and the grid's size and rate.
func (g *configGrid) at(w int, f func(ConfigPoint) float64) float64 {
	if len(g.rates) == 1 {
		return g.atRate(0, w, f)
	}
	return logInterp(g.rates[0].rate, g.atRate(0, w, f), g.rates[1].rate, g.atRate(1, w, f), g.rate)
}

// dur reads a propagation f at w watchers and the grid's size and rate.
func (g *configGrid) dur(w int, f func(ConfigLast) time.Duration) time.Duration {
	return time.Duration(g.at(w, func(c ConfigPoint) float64 { return float64(f(c.ConfigLast)) }))
}

// atRate reads f at w watchers and the grid's size among the points of
// rate layer i.
func (g *configGrid) atRate(i, w int, f func(ConfigPoint) float64) float64 {
	l := g.rates[i]
	var bySize []float64
	for _, ps := range l.sizes {
		a, b := nearestTwo(ps, w)
		bySize = append(bySize, logInterp(float64(ps[a].Watchers), f(ps[a]), float64(ps[b].Watchers), f(ps[b]), float64(w)))
	}
	if len(bySize) == 1 {
		return bySize[0]
	}
	s0, s1 := float64(l.sizes[0][0].Size), float64(l.sizes[1][0].Size)
	return max(0, bySize[0]+(float64(g.size)-s0)/(s1-s0)*(bySize[1]-bySize[0]))
}

// cpu is the servers' CPU at w watchers as seconds a second with no
// update (idle) plus seconds an update: the line through the CPU a
// second at the two rates read (a server's CPU a second has a part that
// does not grow with the updates, which a per-update figure at one rate
// would spread over them). With one rate, or a line that does not rise,
// idle is 0 and the per-update CPU is the one measured at the nearest
// rate, which counts the idle part in (a capacity on the low side). what
// says which.
func (g *configGrid) cpu(w int) (idle, perUpdate float64, what string, ok bool) {
	cpu := func(c ConfigPoint) float64 { return c.ServerCPU }
	if len(g.rates) == 2 {
		r0, r1 := g.rates[0].rate, g.rates[1].rate
		c0, c1 := g.atRate(0, w, cpu)*r0, g.atRate(1, w, cpu)*r1
		if b := (c1 - c0) / (r1 - r0); c0 > 0 && c1 > 0 && b > 0 {
			return max(0, c0-b*r0), b, fmt.Sprintf("with no update, from the CPU a second at %s and %s updates/s", num(r0), num(r1)), true
		}
	}
	per := g.at(w, cpu)
	return 0, per, "(one rate read: its idle CPU counted in each update)", per > 0
}

// logInterp reads y at x on the line through (x0, y0) and (x1, y1) on
// log-log axes, or log-linear axes where a y is not positive.
func logInterp(x0, y0, x1, y1, x float64) float64 {
	if x0 == x1 {
		return y0
	}
	t := (math.Log(x) - math.Log(x0)) / (math.Log(x1) - math.Log(x0))
	if y0 > 0 && y1 > 0 {
		return math.Exp(math.Log(y0) + t*(math.Log(y1)-math.Log(y0)))
	}
	return max(0, y0+t*(y1-y0))
}

// maxWatchers is the most watchers (within the grid's bounds) that meet
// p's target at its size and rate, counted from the asked count in steps
// of about 5%: up to the last that meets when the asked count meets,
// else down to the first that meets (0: none down to the grid's least).
// Read from the asked count, not from the least: a noisy sweep may miss
// at a count far below it and meet again above.
func (g *configGrid) maxWatchers(p *ConfigPrediction) int {
	meets := func(w int) bool {
		mean := g.dur(w, func(c ConfigLast) time.Duration { return c.LastMean })
		return p.meets(g.dur(w, func(c ConfigLast) time.Duration { return c.LastP50 }), g.dur(w, func(c ConfigLast) time.Duration { return c.LastP99 }), p.Ask.Rate*mean.Seconds())
	}
	w := p.Ask.Watchers
	if !meets(w) {
		for w = min(w-1, int(float64(w)/1.05)); w >= g.minW; w = min(w-1, int(float64(w)/1.05)) {
			if meets(w) {
				return w
			}
		}
		return 0
	}
	best := w
	for w = nextCount(w, g.maxW); w <= g.maxW && meets(w); w = nextCount(w, g.maxW) {
		best = w
	}
	return best
}

// nextCount is the next watcher count of the search after w: about 5%
// more, the last one the bound itself (past it when w is the bound).
func nextCount(w, bound int) int {
	if w == bound {
		return bound + 1
	}
	return min(bound, max(w+1, int(float64(w)*1.05)))
}

// Write prints the answer.
func (a *ConfigAnswer) Write(out io.Writer) error {
	p := a.Asked
	var b strings.Builder
	fmt.Fprintf(&b, "config center plan: %s %s, %d watchers of a %d-byte config, %s updates/s\n", p.Backend, p.Ask.Variant, p.Ask.Watchers, p.Ask.Size, num(p.Ask.Rate))
	fmt.Fprintf(&b, "model: each update fans out to every watcher before the next (fan-out utilisation = rate × mean propagation to the last watcher); "+
		"propagation and per-update counts read off the measured cases: between watcher counts on log-log axes, between sizes linearly, between rates on log-log axes\n")
	for _, c := range p.Basis {
		fmt.Fprintf(&b, "basis: run %s, case %s (%d watchers, %d bytes, %s updates/s)\n", c.Run, c.Case, c.Watchers, c.Size, num(c.Rate))
	}
	writeNotes(&b, p.Extrapolated, a.Left)
	tw := intervalTable(&b)
	fmt.Fprintf(tw, "last watcher p50 (ms)\t%s\t%s to %s\tmodel: read off the basis\n", msNum(p.LastP50), msNum(p.LastP50Span[0]), msNum(p.LastP50Span[1]))
	fmt.Fprintf(tw, "last watcher p99 (ms)\t%s\t%s to %s\tmodel: read off the basis\n", msNum(p.LastP99), msNum(p.LastP99Span[0]), msNum(p.LastP99Span[1]))
	fmt.Fprintf(tw, "fan-out utilisation\t%s\t\tderived: %s updates/s × mean %s ms\n", pctStr(p.Utilisation), num(p.Ask.Rate), msNum(p.LastMean))
	tw.Flush()
	fmt.Fprintln(&b, "(each interval: the percentile's 90% interval from the updates its measured cases counted, read off the same way; the sampling spread, not the model's error)")
	fmt.Fprintln(&b)
	tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "load\tper second\tper update\n")
	for _, l := range p.Load {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Figure, num(l.PerSec), num(l.PerUpdate))
	}
	tw.Flush()
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "capacity, in updates per second, first to saturate first:")
	tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "resource\tfull at updates/s\tshare now\tfrom\n")
	for _, r := range p.Resources {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, num(r.Capacity), pctStr(r.Share), r.Source)
	}
	tw.Flush()
	first := p.Resources[0]
	room := "headroom " + pctStr(1-first.Share)
	if first.Share > 1 {
		room = "OVER CAPACITY by " + pctStr(first.Share-1)
	}
	fmt.Fprintf(&b, "first to saturate: %s, at %s updates/s; %s\n", first.Name, num(first.Capacity), room)
	verdict := "meets"
	if !p.Meets {
		verdict = "MISSES"
	}
	most := fmt.Sprintf("at most %d watchers meet it at this size and rate (model, searched up to %d: %vx the largest measured count)", p.MaxWatchers, p.SearchedTo, MaxExtrapolation)
	switch {
	case p.MaxWatchers == 0:
		most = fmt.Sprintf("no count from %d down to %d (half the smallest measured) meets it at this size and rate (model)", p.Ask.Watchers, p.SearchedFrom)
	case p.MaxWatchers >= p.SearchedTo:
		most = fmt.Sprintf("every count up to %d (%vx the largest measured) meets it at this size and rate (model); beyond that not predicted", p.SearchedTo, MaxExtrapolation)
	}
	fmt.Fprintf(&b, "answer: %s p%s ≤ %s ms to the last watcher; %s\n", verdict, num(p.Ask.Percentile), num(Millis(p.Ask.Bound)), most)
	b.WriteString(p.errorLine())
	if len(a.Others) > 0 {
		fmt.Fprintln(&b)
		fmt.Fprintln(&b, "every watching variant at the same point:")
		tw = tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "variant\tlast p50\tlast p99\tmeets\tnotifications/s (server)\tbytes/s (server)\tfirst to saturate\tmax watchers\n")
		for _, o := range append([]*ConfigPrediction{p}, a.Others...) {
			yes := "yes"
			if !o.Meets {
				yes = "no"
			}
			fmt.Fprintf(tw, "%s\t%s ms\t%s ms\t%s\t%s\t%s\t%s\t%d\n", o.Ask.Variant, msNum(o.LastP50), msNum(o.LastP99), yes,
				num(o.load("notifications/s (server)")), num(o.load("bytes/s (server)")), o.Resources[0].Name, o.MaxWatchers)
		}
		tw.Flush()
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// load is p's predicted figure per second (0 if not predicted).
func (p *ConfigPrediction) load(figure string) float64 {
	for _, l := range p.Load {
		if l.Figure == figure {
			return l.PerSec
		}
	}
	return 0
}

// errorLine is the config plan's line on its own measured error.
func (p *ConfigPrediction) errorLine() string {
	if p.Utilisation > MaxPlanUtilisation {
		return fmt.Sprintf("model error: not measured above %.0f%% fan-out utilisation (this plan: %s): updates meet there, which the model does not read\n",
			100*MaxPlanUtilisation, pctStr(p.Utilisation))
	}
	return ModelErrorLine(ModeConfig)
}

// ValidateConfig compares p with the case of run that measured its point.
func ValidateConfig(p *ConfigPrediction, run *results.Run) (*Validation, error) {
	size, _ := strconv.Atoi(run.Config.Params["size"])
	switch {
	case size != p.Ask.Size:
		return nil, fmt.Errorf("run %s ran a %d-byte config, the prediction is for %d bytes", run.ID, size, p.Ask.Size)
	case run.Config.Rate > 0 && math.Abs(run.Config.Rate-p.Ask.Rate) > 1e-6*p.Ask.Rate:
		return nil, fmt.Errorf("run %s ran at --rate %v, the prediction is for %v updates/s", run.ID, run.Config.Rate, p.Ask.Rate)
	case run.Config.Rate <= 0:
		return nil, fmt.Errorf("run %s ran at the workload's default rate, not a --rate: give a run made at --rate %v", run.ID, p.Ask.Rate)
	}
	r, v, last, err := validationOf(run, Key{Workload: p.Ask.Workload, Backend: p.Backend, Variant: p.Ask.Variant, Clients: p.Ask.Watchers},
		lastOf, "has no propagation to the last watcher from the write's start")
	if err != nil {
		return nil, err
	}
	v.add("last watcher p50 (ms)", Millis(p.LastP50), Millis(last.LastP50))
	v.add("last watcher p99 (ms)", Millis(p.LastP99), Millis(last.LastP99))
	v.add("updates/s", p.Ask.Rate, r.Throughput)
	counts := countsOf(r)
	for _, l := range p.Load {
		for _, m := range configLoads {
			// The servers' CPU is 0 where it was not measured.
			if per := m.of(counts); m.figure == l.Figure && (per > 0 || m.figure != configCPU) {
				v.add(l.Figure, l.PerSec, per*r.Throughput)
			}
		}
	}
	return v, nil
}

// WriteConfigPlan prints a config plan and its validation (nil: none), as
// text or as one JSON object.
func WriteConfigPlan(out io.Writer, ans *ConfigAnswer, val *Validation, asJSON bool) error {
	return writePlan(out, ans, val, asJSON, struct {
		*ConfigAnswer
		Validation *Validation `json:"validation,omitempty"`
	}{ans, val})
}
