package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// WatcherPoint is one measured config case: N watchers of a config of
// Size bytes, and how long until the last of them had each update.
type WatcherPoint struct {
	Clients int `json:"clients"`
	// LastP99 is the p99 over updates of the time until the last client
	// had the update (histogram "propagate_last"); P99 each client's.
	LastP99 time.Duration `json:"last_p99_ns"`
	P99     time.Duration `json:"p99_ns"`
	// BytesPerUpdate: bytes the clients received per update.
	BytesPerUpdate float64 `json:"bytes_per_update"`
	// ClientBound, if set, says why the load generator was the limit, or
	// (starting "loaded machine: ") that other processes took the
	// machine; the point is left out of the answer.
	ClientBound string `json:"client_bound,omitempty"`
}

// WatcherCapacity answers, for one backend, variant and config size: how
// many watchers can be updated (every one has the update) within Target.
type WatcherCapacity struct {
	Backend backends.Kind `json:"backend"`
	Variant string        `json:"variant"`
	class   figures.Class
	Size    int            `json:"size"`
	Target  time.Duration  `json:"target_ns"`
	Points  []WatcherPoint `json:"points"`
	// Watchers is the answer (0 when none meets the target); Status says
	// how it was reached: "interpolated" (between a measured count that
	// met the target and the next that did not, log-log), "at least" (every
	// usable count met it: the largest measured), "none" (the smallest
	// usable count already missed it), "client-bound" (no usable point).
	Watchers int    `json:"watchers"`
	Status   string `json:"status"`
}

// WatcherCapacities reads the config workload's results of runs (each run
// one --size; runs of several sizes together) and answers for each
// backend, variant and size against target (the p99 of until the last
// client has an update; DefaultP99 if 0). Ordered by backend, variant and
// size.
func WatcherCapacities(runs []*results.Run, target time.Duration) []WatcherCapacity {
	if target <= 0 {
		target = DefaultP99
	}
	type key struct {
		backend backends.Kind
		variant string
		size    int
	}
	by := map[key]*WatcherCapacity{}
	var out []*WatcherCapacity
	for _, run := range runs {
		for i := range run.Results {
			r := &run.Results[i]
			if r.UnitOf() != figures.Update {
				continue
			}
			size, _ := strconv.Atoi(run.Config.Params["size"])
			last, ok := r.Latency[figures.LatencyPropagateLast]
			if !ok || last == nil {
				continue
			}
			k := key{r.Backend, r.Variant, size}
			wc := by[k]
			if wc == nil {
				wc = &WatcherCapacity{Backend: r.Backend, Variant: r.Variant, class: r.ClassOf(), Size: size, Target: target}
				by[k] = wc
				out = append(out, wc)
			}
			p := WatcherPoint{Clients: r.Clients, LastP99: time.Duration(last.P99), BytesPerUpdate: r.PerOp[figures.BytesReceived.Key]}
			if h := r.Latency[figures.LatencyPropagate]; h != nil {
				p.P99 = time.Duration(h.P99)
			}
			if b := r.Load.Bound(); b != nil {
				p.ClientBound = b.Detail
			} else if x := r.Load.Loaded(); x != nil {
				p.ClientBound = loadedPrefix + x.Detail
			}
			wc.Points = append(wc.Points, p)
		}
	}
	res := make([]WatcherCapacity, 0, len(out))
	for _, wc := range out {
		slices.SortFunc(wc.Points, func(a, b WatcherPoint) int { return cmp.Compare(a.Clients, b.Clients) })
		wc.answer()
		res = append(res, *wc)
	}
	slices.SortFunc(res, func(a, b WatcherCapacity) int {
		return cmp.Or(cmp.Compare(a.Backend, b.Backend), CompareVariants(a.class, a.Variant, b.class, b.Variant), cmp.Compare(a.Size, b.Size))
	})
	return res
}

// answer finds the largest watcher count within the target among the
// usable (not client-bound) points.
func (wc *WatcherCapacity) answer() {
	var usable []WatcherPoint
	for _, p := range wc.Points {
		if p.ClientBound == "" {
			usable = append(usable, p)
		}
	}
	if len(usable) == 0 {
		wc.Status = "client-bound"
		return
	}
	if usable[0].LastP99 > wc.Target {
		wc.Status = "none"
		return
	}
	for i := 1; i < len(usable); i++ {
		lo, hi := usable[i-1], usable[i]
		if hi.LastP99 <= wc.Target {
			continue
		}
		// log-log between lo (meets) and hi (misses).
		x0, x1 := math.Log(float64(lo.Clients)), math.Log(float64(hi.Clients))
		y0, y1 := math.Log(max(float64(lo.LastP99), 1)), math.Log(float64(hi.LastP99))
		x := x0
		if y1 > y0 {
			x = x0 + (math.Log(float64(wc.Target))-y0)*(x1-x0)/(y1-y0)
		}
		wc.Watchers = max(lo.Clients, int(math.Exp(x)))
		wc.Status = "interpolated"
		return
	}
	wc.Watchers = usable[len(usable)-1].Clients
	wc.Status = "at least"
}

// Text is the answer in words.
func (wc WatcherCapacity) Text() string {
	switch wc.Status {
	case "none":
		return fmt.Sprintf("fewer than %d", wc.Points[0].Clients)
	case "client-bound":
		for _, p := range wc.Points {
			if strings.HasPrefix(p.ClientBound, loadedPrefix) {
				return "not answered: every case was client-bound or measured on a loaded machine"
			}
		}
		return "not answered: every case was client-bound"
	case "at least":
		return fmt.Sprintf("at least %d (every usable count met the target)", wc.Watchers)
	}
	return fmt.Sprintf("about %d", wc.Watchers)
}

// loadedPrefix starts a point's ClientBound when other processes, not the
// load generator, took the machine.
const loadedPrefix = "loaded machine: "
