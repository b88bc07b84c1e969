package analysis

import (
	"cmp"
	"errors"
	"fmt"
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
	// had the update, from the start of the write (histogram
	// "propagate_last_start"; in files from before it was kept, from the
	// reply: "propagate_last"). P50, P99 and P999 are each client's
	// reloads, on the same clock.
	LastP99 time.Duration `json:"last_p99_ns"`
	P50     time.Duration `json:"p50_ns,omitempty"`
	P99     time.Duration `json:"p99_ns"`
	P999    time.Duration `json:"p999_ns,omitempty"`
	// FromStart says the latencies count from the write's start.
	FromStart bool `json:"from_start,omitempty"`
	// BytesPerUpdate: bytes the clients received per update;
	// ServerBytesPerUpdate what the servers sent.
	BytesPerUpdate       float64 `json:"bytes_per_update"`
	ServerBytesPerUpdate float64 `json:"server_bytes_per_update,omitempty"`
	// Notifications per update, client and server side.
	Notifications       float64 `json:"notifications_per_update,omitempty"`
	ServerNotifications float64 `json:"server_notifications_per_update,omitempty"`
	// ServerCPUPerUpdate is the servers' CPU seconds per update (0: not
	// measured).
	ServerCPUPerUpdate float64 `json:"server_cpu_seconds_per_update,omitempty"`
	// HeapPerWatcher is the servers' live heap per watching client
	// (results.WatchFootprint; 0: not measured).
	HeapPerWatcher float64 `json:"heap_per_watcher_bytes,omitempty"`
	// HeapPerWatcherNoise is what HeapPerWatcher can resolve: the heap
	// reading's own noise per watching client (nil: not read).
	HeapPerWatcherNoise *float64 `json:"heap_per_watcher_noise_bytes,omitempty"`
	// Skipped: per update, the clients that never loaded it.
	Skipped      float64 `json:"versions_skipped,omitempty"`
	SessionsLost int64   `json:"sessions_lost,omitempty"`
	// ClientBound, if set, says why the load generator was the limit, or
	// (starting "loaded machine: ") that other processes took the
	// machine; the point is left out of the answer.
	ClientBound string `json:"client_bound,omitempty"`
}

// WatcherCapacity answers, for one backend, variant and config size: how
// many watchers can be updated (every one has the update) within Target.
type WatcherCapacity struct {
	Workload string        `json:"workload"`
	Backend  backends.Kind `json:"backend"`
	Variant  string        `json:"variant"`
	class    figures.Class
	Size     int `json:"size"`
	// Rate is the runs' --rate (0: the workload's default): points at
	// other rates answer apart.
	Rate   float64        `json:"rate,omitempty"`
	Target time.Duration  `json:"target_ns"`
	Points []WatcherPoint `json:"points"`
	// Watchers is the answer, a measured count (0 when none meets the
	// target); Missed the smallest measured count above it that missed
	// (0 if none did). Status says how it was reached: "measured" (met at
	// Watchers, missed at Missed), "at least" (every usable count met it:
	// the largest measured), "none" (the smallest usable count already
	// missed it), "client-bound" (no usable point). Nothing is
	// interpolated: the answer is where the target held in a kept case.
	Watchers int    `json:"watchers"`
	Missed   int    `json:"missed,omitempty"`
	Status   string `json:"status"`
}

// WatcherCapacities reads the config workload's results of runs (each run
// one --size; runs of several sizes together) and answers for each
// backend, variant, size and --rate against target (the p99 of until the
// last client has an update; DefaultP99 if 0). Ordered by backend,
// variant, size and rate.
func WatcherCapacities(runs []*results.Run, target time.Duration) []WatcherCapacity {
	if target <= 0 {
		target = DefaultP99
	}
	type key struct {
		backend backends.Kind
		variant string
		size    int
		rate    float64
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
			each, last, fromStart := r.Latency[figures.LatencyPropagateStart], r.Latency[figures.LatencyPropagateLastStart], true
			if last == nil {
				each, last, fromStart = r.Latency[figures.LatencyPropagate], r.Latency[figures.LatencyPropagateLast], false
			}
			if last == nil {
				continue
			}
			k := key{r.Backend, r.Variant, size, run.Config.Rate}
			wc := by[k]
			if wc == nil {
				wc = &WatcherCapacity{Workload: r.Workload, Backend: r.Backend, Variant: r.Variant, class: r.ClassOf(), Size: size, Rate: k.rate, Target: target}
				by[k] = wc
				out = append(out, wc)
			}
			p := WatcherPoint{Clients: r.Clients, LastP99: time.Duration(last.P99), FromStart: fromStart,
				BytesPerUpdate: r.PerOp[figures.BytesReceived.Key], ServerBytesPerUpdate: r.PerOp[figures.ServerBytesSent.Key],
				Notifications: r.PerOp[figures.WatchEvents.Key], ServerNotifications: r.PerOp[figures.ServerWatchEvents.Key],
				Skipped: r.PerOp[figures.VersionsSkipped.Key], SessionsLost: r.SessionsLost}
			if each != nil {
				p.P50, p.P99, p.P999 = time.Duration(each.P50), time.Duration(each.P99), time.Duration(each.P999)
			}
			if r.Cost.ServerCostMeasured && r.Ops.Succeeded > 0 {
				p.ServerCPUPerUpdate = r.Cost.ServerCPUSeconds / float64(r.Ops.Succeeded)
			}
			if w := r.Watch; w != nil {
				p.HeapPerWatcher, p.HeapPerWatcherNoise = w.HeapPerWatcher, w.HeapPerWatcherNoise
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
		return cmp.Or(cmp.Compare(a.Backend, b.Backend), CompareVariants(a.class, a.Variant, b.class, b.Variant), cmp.Compare(a.Size, b.Size), cmp.Compare(a.Rate, b.Rate))
	})
	return res
}

// answer finds the largest measured watcher count within the target
// among the usable (not client-bound) points, and the smallest above it
// that missed.
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
		wc.Status, wc.Missed = "none", usable[0].Clients
		return
	}
	for i := 1; i < len(usable); i++ {
		if usable[i].LastP99 > wc.Target {
			wc.Watchers, wc.Missed, wc.Status = usable[i-1].Clients, usable[i].Clients, "measured"
			return
		}
	}
	wc.Watchers = usable[len(usable)-1].Clients
	wc.Status = "at least"
}

// Text is the answer in words.
func (wc WatcherCapacity) Text() string {
	switch wc.Status {
	case "none":
		return fmt.Sprintf("fewer than %d", wc.Missed)
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
	return fmt.Sprintf("%d (met there; missed at %d)", wc.Watchers, wc.Missed)
}

// loadedPrefix starts a watcher point's ClientBound, or a compared case's
// BoundA or BoundB, when other processes, not the load generator, took the
// machine.
const loadedPrefix = "loaded machine: "

// Modelled is zkbench plan's answer to wc's question from the config runs
// among runs (the cases the plan reads: client-bound ones and ones on a
// loaded machine left out): the prediction at wc's measured answer (or,
// with none, at its smallest measured count), whose MaxWatchers is the
// model's most watchers within wc.Target at wc's size and rate; and the
// fan-out utilisation the model gives at MaxWatchers (where its kept
// error applies only up to MaxPlanUtilisation).
func (wc WatcherCapacity) Modelled(runs []*results.Run) (p *ConfigPrediction, utilAtMost float64, err error) {
	if wc.Rate <= 0 {
		return nil, 0, errors.New("the runs were made at the workload's default rate, not a --rate")
	}
	ask := ConfigAsk{Workload: wc.Workload, Backend: wc.Backend, Variant: wc.Variant, Watchers: wc.Watchers, Size: wc.Size, Rate: wc.Rate, Percentile: 99, Bound: wc.Target}
	if ask.Watchers == 0 {
		ask.Watchers = wc.Points[0].Clients
	}
	ans, err := PredictConfig(runs, ask)
	if err != nil {
		return nil, 0, err
	}
	p, utilAtMost = ans.Asked, ans.Asked.Utilisation
	if p.MaxWatchers > 0 && p.MaxWatchers != ask.Watchers {
		ask.Watchers = p.MaxWatchers
		at, err := PredictConfig(runs, ask)
		if err != nil {
			return nil, 0, err
		}
		utilAtMost = at.Asked.Utilisation
	}
	return p, utilAtMost, nil
}

// AnswerText is the model's most watchers within the target in words.
func (p *ConfigPrediction) AnswerText() string {
	switch {
	case p.MaxWatchers == 0:
		return fmt.Sprintf("none from %d down to %d", p.Ask.Watchers, p.SearchedFrom)
	case p.MaxWatchers >= p.SearchedTo:
		return fmt.Sprintf("at least %d (the model reads no further: %vx the largest measured)", p.SearchedTo, MaxExtrapolation)
	}
	return fmt.Sprint(p.MaxWatchers)
}

// ConfigCheck is one measured config case beside the plan's prediction
// of it from the other cases of the same runs (Err, if the model could
// not predict it; ErrBeyondBasis for a case at the end of its sweep).
type ConfigCheck struct {
	Run, Case string
	Backend   backends.Kind
	Variant   string
	Watchers  int
	Size      int
	Rate      float64
	Measured  ConfigLast
	Predicted *ConfigPrediction
	Err       error
}

// CheckConfigCases sets each config case of runs the plan could read (a
// watching variant, made at a --rate, propagation from the write's start
// kept, neither client-bound nor on a loaded machine) beside its
// prediction from every other case of runs: the case itself left out, so
// the prediction is the model's, read off its neighbours.
func CheckConfigCases(runs []*results.Run) ([]ConfigCheck, error) {
	var out []ConfigCheck
	for _, run := range runs {
		size, err := strconv.Atoi(run.Config.Params["size"])
		if err != nil || run.Config.Rate <= 0 {
			continue
		}
		for i := range run.Results {
			r := &run.Results[i]
			if r.UnitOf() != figures.Update || r.Load.Bound() != nil || r.Load.Loaded() != nil {
				continue
			}
			if c := countsOf(r); c.ServerNotifications == 0 && c.ClientNotifications == 0 {
				continue // polls: the plan models a watch's fan-out
			}
			last, ok, err := lastOf(r)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			c := ConfigCheck{Run: run.ID, Case: KeyOf(r).String(), Backend: r.Backend, Variant: r.Variant, Watchers: r.Clients, Size: size, Rate: run.Config.Rate, Measured: last}
			ans, err := PredictConfig(withoutCase(runs, run, i), ConfigAsk{Workload: r.Workload, Backend: r.Backend, Variant: r.Variant,
				Watchers: r.Clients, Size: size, Rate: run.Config.Rate, Percentile: 99, Bound: DefaultP99})
			if err != nil {
				c.Err = err
			} else {
				c.Predicted = ans.Asked
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// withoutCase is runs with the i-th result of run left out (run itself is
// not changed).
func withoutCase(runs []*results.Run, run *results.Run, i int) []*results.Run {
	out := slices.Clone(runs)
	for j, x := range out {
		if x == run {
			c := *run
			c.Results = slices.Delete(slices.Clone(run.Results), i, i+1)
			out[j] = &c
		}
	}
	return out
}
