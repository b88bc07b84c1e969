package analysis

// Predict answers an operator's question about a lock workload — N workers,
// each asking every T (or after a think time T), holding for H — from kept
// closed-loop sweeps and a calibration: the wait distribution (the queue
// model of queue.go, service = hold + the measured handoff distribution),
// the server load by kind, its share of calibrated capacity, the first
// resource to saturate, and every variant side by side at the same point.

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// TwoStates is the factor between the waiters at a handoff of two
// self-consistent simulations above which they are two states of the lock
// (Prediction.OtherState), not one read from neighbouring cases.
const TwoStates = 2.0

// MaxExtrapolation bounds a prediction: clients beyond this factor of the
// largest measured (not client-bound) client count are refused.
const MaxExtrapolation = 2.0

// ErrNoData: the results hold nothing the workload can be predicted from.
var ErrNoData = errors.New("analysis: no measured case for this workload")

// Workload is an operator's lock workload for Predict.
type Workload struct {
	Workload string `json:"workload"`
	// Backend may be empty when the results hold one backend.
	Backend backends.Kind `json:"backend"`
	// Variant to predict; every variant of the workload and backend is
	// predicted beside it (Prediction.Others).
	Variant string `json:"variant"`
	Clients int    `json:"clients"`
	// Every is each client's period (open loop at Clients/Every per
	// second in all); Think is the pause after each release (finite
	// source). Exactly one is set.
	Every time.Duration `json:"every_ns"`
	Think time.Duration `json:"think_ns"`
	Hold  time.Duration `json:"hold_ns"`
	// Percentile (0..100) and Bound: the target, wait at Percentile ≤ Bound.
	Percentile float64       `json:"percentile"`
	Bound      time.Duration `json:"bound_ns"`
	// Acquisitions and Seed of the simulation (defaults: 200,000, 1).
	Acquisitions int    `json:"acquisitions"`
	Seed         uint64 `json:"seed"`
	// ServiceFrom, when set, is a run (open or closed loop) whose handoff
	// distribution the simulation draws from instead of the sweep's, for
	// every acquisition, queued or not: a run at the workload's own duty
	// cycle, where processes that sleep between operations pay their
	// wake-ups. Per-acquisition counts still come from the sweep.
	ServiceFrom *results.Run `json:"-"`
}

// Rate is the open-loop acquisition rate over all clients (0 for the
// finite source).
func (w Workload) Rate() float64 {
	if w.Every <= 0 {
		return 0
	}
	return float64(w.Clients) / w.Every.Seconds()
}

// Model names the arrival process the prediction simulates.
func (w Workload) Model() string {
	if w.Every > 0 {
		return fmt.Sprintf("open loop: %d clients, %s acquisitions/s scheduled in all (one every %s per client), FIFO lock, service = hold %s + measured handoff",
			w.Clients, num(w.Rate()), w.Every, w.Hold)
	}
	return fmt.Sprintf("finite source (M/G/1//N): %d clients, each asking %s after its release, FIFO lock, service = hold %s + measured handoff",
		w.Clients, w.Think, w.Hold)
}

// Source says where a number came from.
type Source struct {
	// Kind: "measured" (a kept case), "model" (the simulation),
	// "calibration" (a run's --calibrate), "derived" (arithmetic on the
	// others, named in What).
	Kind string `json:"kind"`
	// Run is the results file's run ID, Case the case key.
	Run  string `json:"run,omitempty"`
	Case string `json:"case,omitempty"`
	What string `json:"what,omitempty"`
}

func (s Source) String() string {
	switch s.Kind {
	case "measured":
		return fmt.Sprintf("measured: run %s, case %s", s.Run, s.Case)
	case "calibration":
		return fmt.Sprintf("calibration: run %s", s.Run)
	}
	if s.What != "" {
		return s.Kind + ": " + s.What
	}
	return s.Kind
}

// LoadFigure is one kind of server load.
type LoadFigure struct {
	Kind string `json:"kind"` // "requests", "writes", "reads", "notifications", "bytes"
	// PerAcquisition is measured; PerSec = PerAcquisition × the predicted
	// acquisition rate.
	PerAcquisition float64 `json:"per_acquisition"`
	PerSec         float64 `json:"per_sec"`
	Side           string  `json:"side"` // "server" or "client"
	Source         Source  `json:"source"`
}

// Resource is one thing that can saturate, with its capacity in
// acquisitions per second.
type Resource struct {
	Name string `json:"name"`
	// Capacity is the acquisition rate at which the resource is full.
	Capacity float64 `json:"capacity_acq_per_sec"`
	// Share is the predicted acquisition rate over Capacity.
	Share  float64 `json:"share"`
	Source Source  `json:"source"`
}

// Prediction answers Predict for one variant.
type Prediction struct {
	Workload Workload      `json:"workload"`
	Variant  string        `json:"variant"`
	Class    figures.Class `json:"class"`
	Backend  backends.Kind
	// Basis is the measured case the handoff and per-acquisition figures
	// come from: the one nearest the simulated waiters at a handoff plus
	// one (settled from two starting points, the worse kept).
	Basis Source `json:"basis"`
	// BasisClients is its client count; Extrapolated is set when the
	// workload's clients are outside the measured range, Range says so.
	BasisClients int    `json:"basis_clients"`
	Extrapolated bool   `json:"extrapolated"`
	Range        string `json:"range"`
	// Skipped are the client-bound cases left out, with their reasons.
	Skipped []string `json:"skipped,omitempty"`
	// Service is the case the handoff distribution came from: Basis, or
	// the ServiceFrom run's.
	Service Source `json:"service"`
	// OtherState is a second self-consistent state the simulation settles
	// in from the least contended case, better than this answer's; nil
	// when both starts agree.
	OtherState *State `json:"other_state,omitempty"`
	// Cycled: the basis never settled (the measured handoff falls as
	// clients grow, so more waiters pick a faster handoff, which makes
	// fewer waiters); the answer is the worst state visited.
	Cycled bool `json:"cycled,omitempty"`
	// Free is the one-client case uncontended acquires and their counts
	// come from; nil when the results have none.
	Free *Source `json:"free,omitempty"`
	// Idle, when set, is where the uncontended acquires' latency comes
	// from instead of Free: one-client open-loop cases at the workload's
	// rate (predict_idle.go). Their counts still come from Free.
	Idle *Source `json:"idle,omitempty"`
	// Handoff mean of the basis case.
	Handoff time.Duration `json:"handoff_mean_ns"`
	Sim     *QueueResult  `json:"-"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	// P50Interval, P99Interval and TargetInterval: the middle 90% of those
	// waits over bootstrap replicates of the measured inputs (interval.go);
	// zero when Overloaded.
	P50Interval    Interval `json:"p50_interval_ns"`
	P99Interval    Interval `json:"p99_interval_ns"`
	TargetInterval Interval `json:"target_interval_ns"`
	// AtTarget is the wait at the target's percentile; Meets compares it
	// with the bound.
	AtTarget time.Duration `json:"at_target_ns"`
	// Overloaded: the open loop asks for more than the lock can serve
	// (offered utilisation ≥ 1): waits grow for as long as the load
	// lasts, and the percentiles above are only what the simulated
	// length reached.
	Overloaded bool         `json:"overloaded,omitempty"`
	Meets      bool         `json:"meets"`
	Load       []LoadFigure `json:"load"`
	// Resources, the first to saturate first (lowest capacity).
	Resources []Resource `json:"resources"`
	// Headroom is 1 − the largest share.
	Headroom float64 `json:"headroom"`
	// Calibration is the run whose calibration the shares use ("" none).
	Calibration string `json:"calibration,omitempty"`
	// MaxClients is the most clients (same per-client demand) that meet
	// the target, by bisection over the model within the allowed range
	// (0: not even one; -1: not searched).
	MaxClients int `json:"max_clients"`
	// OneClient is the wait at the target percentile with one client, the
	// nearest achievable when MaxClients is 0.
	OneClient time.Duration `json:"one_client_ns,omitempty"`
}

// State is one self-consistent state of the simulation: the basis case
// whose handoffs it drew, and the waits they gave.
type State struct {
	Basis            Source        `json:"basis"`
	Handoff          time.Duration `json:"handoff_mean_ns"`
	P50              time.Duration `json:"p50_ns"`
	P99              time.Duration `json:"p99_ns"`
	Throughput       float64       `json:"throughput"`
	WaitersAtHandoff float64       `json:"waiters_at_handoff"`
}

// PlanAnswer is Predict's answer: the variant asked for and every other
// variant of the workload and backend at the same point.
type PlanAnswer struct {
	Model  string        `json:"model"`
	Asked  *Prediction   `json:"asked"`
	Others []*Prediction `json:"others,omitempty"`
	// LeftOut are the other variants that could not be predicted, and why.
	LeftOut []string `json:"left_out,omitempty"`
}

// Predict predicts w from runs.
func Predict(runs []*results.Run, w Workload) (*PlanAnswer, error) {
	if w.Workload == "" {
		return nil, errors.New("analysis: plan needs the workload to model")
	}
	if w.Clients < 1 {
		return nil, fmt.Errorf("analysis: plan needs --clients ≥ 1 (got %d)", w.Clients)
	}
	if w.Every > 0 && w.Think > 0 {
		return nil, errors.New("analysis: give either a period per client (--every) or a think time (--think), not both")
	}
	if w.Every < 0 || w.Think < 0 || w.Hold < 0 {
		return nil, errors.New("analysis: --every, --think and --hold must not be negative")
	}
	if w.Percentile <= 0 || w.Percentile >= 100 {
		return nil, fmt.Errorf("analysis: target percentile %v: give one between 0 and 100", w.Percentile)
	}
	if w.Seed == 0 {
		w.Seed = 1
	}
	cands, backendsSeen := basisCases(runs, w.Workload)
	if len(cands) > 0 && cands[0].c.Unit() != figures.Acquisition {
		return nil, fmt.Errorf("analysis: plan models lock workloads (one holder, FIFO waiters); %q is not one", w.Workload)
	}
	if w.Backend == "" {
		if len(backendsSeen) > 1 {
			return nil, fmt.Errorf("analysis: the results hold %v: say which with --backend", backendsSeen)
		}
		if len(backendsSeen) == 1 {
			w.Backend = backendsSeen[0]
		}
	}
	variants := map[string][]basisCase{}
	var order []string
	for _, b := range cands {
		if b.c.Backend != w.Backend {
			continue
		}
		if _, ok := variants[b.c.Variant]; !ok {
			order = append(order, b.c.Variant)
		}
		variants[b.c.Variant] = append(variants[b.c.Variant], b)
	}
	if len(order) == 0 {
		on := ""
		if w.Backend != "" {
			on = " on " + string(w.Backend)
		}
		return nil, fmt.Errorf("%w: the results hold no closed-loop %s case%s, only %s (run a sweep: zkbench run --workload %s --backend %s --clients 10,100)",
			ErrNoData, w.Workload, on, heldRuns(runs), w.Workload, cmp.Or(string(w.Backend), "zookeeper"))
	}
	slices.SortFunc(order, func(a, b string) int {
		return CompareVariants(variants[a][0].c.Class, a, variants[b][0].c.Class, b)
	})
	if _, ok := variants[w.Variant]; !ok {
		return nil, fmt.Errorf("%w: variant %q of %s on %s is not in the results; they hold %v", ErrNoData, w.Variant, w.Workload, w.Backend, order)
	}
	ans := &PlanAnswer{Model: w.Model()}
	idle := idleCases(runs, w.Workload, w.Backend)
	for _, v := range order {
		var is idleSet
		if idle[v] != nil {
			is = *idle[v]
		}
		p, err := predictVariant(w, v, variants[v], is)
		if err != nil {
			if v == w.Variant {
				return nil, err
			}
			ans.LeftOut = append(ans.LeftOut, fmt.Sprintf("%s: %v", v, err))
			continue
		}
		if v == w.Variant {
			ans.Asked = p
		} else {
			ans.Others = append(ans.Others, p)
		}
	}
	return ans, nil
}

func predictVariant(w Workload, variant string, cands []basisCase, idle idleSet) (*Prediction, error) {
	p := &Prediction{Workload: w, Variant: variant, Class: cands[0].c.Class, Backend: w.Backend, MaxClients: -1}
	var ok []basisCase
	var free *basisCase // a one-client case: every acquisition uncontended
	for _, b := range cands {
		if cb := b.c.ClientBound(); cb != nil {
			p.Skipped = append(p.Skipped, fmt.Sprintf("run %s case %s: client-bound, %s", b.run.ID, b.c.Key, cb.Detail))
			continue
		}
		if x := b.c.Loaded(); x != nil {
			p.Skipped = append(p.Skipped, fmt.Sprintf("run %s case %s: loaded machine, %s", b.run.ID, b.c.Key, x.Detail))
			continue
		}
		if b.c.Clients == 1 {
			if h, err := b.c.Latency(b.c.PrimaryLatency()); err == nil && h != nil && h.TotalCount() > 0 && (free == nil || b.c.Succeeded() > free.c.Succeeded()) {
				free = &b
			}
			continue
		}
		if h, err := b.c.Latency(figures.LatencyHandoff); err != nil || h == nil || h.TotalCount() == 0 {
			p.Skipped = append(p.Skipped, fmt.Sprintf("run %s case %s: no handoff recorded", b.run.ID, b.c.Key))
			continue
		}
		ok = append(ok, b)
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("%w: every %s case of %s on %s was left out: %v", ErrNoData, variant, w.Workload, w.Backend, p.Skipped)
	}
	minN, maxN := ok[0].c.Clients, ok[0].c.Clients
	for _, b := range ok {
		minN, maxN = min(minN, b.c.Clients), max(maxN, b.c.Clients)
	}
	limit := int(MaxExtrapolation * float64(maxN))
	if w.Clients > limit {
		return nil, fmt.Errorf("analysis: %d clients is more than %gx the largest measured %s case (N=%d on %s): the model is not extrapolated that far; measure it (zkbench run --clients %d) or ask for at most %d",
			w.Clients, MaxExtrapolation, variant, maxN, w.Backend, w.Clients, limit)
	}
	var fs *Sampler
	var freeFn func(*rand.Rand) *Sampler // fs, or a bootstrap resample of it
	if free != nil {
		h, _ := free.c.Latency(free.c.PrimaryLatency())
		var err error
		if fs, err = NewSampler(h); err != nil {
			return nil, err
		}
		freeFn = resampled(fs)
		p.Free = &Source{Kind: "measured", Run: free.run.ID, Case: free.c.Key.String()}
	}
	// freeAt is the uncontended acquire of the workload with n clients:
	// with idle runs, at its rate (the search for the most clients that
	// meet the target changes the rate), else fs.
	freeAt := func(int) *Sampler { return fs }
	if w.ServiceFrom == nil && (w.Every > 0 || w.Think > 0) {
		p.Skipped = append(p.Skipped, idle.skipped...)
		is, src, ok, err := idleSampler(idle.ok, w.offered(w.Clients))
		if err != nil {
			return nil, err
		}
		if ok {
			freeFn, fs, p.Idle = is, is(nil), &src
			freeAt = func(n int) *Sampler {
				if is, _, _, err := idleSampler(idle.ok, w.offered(n)); err == nil && is != nil {
					return is(nil)
				}
				return fs
			}
		}
	}
	// The basis is the case whose contention matches the workload's: first
	// the one nearest in clients, then the one nearest the simulated
	// waiters at a handoff (a closed-loop case of N clients hands over to
	// one of N−1 waiters), until the choice settles.
	// With ServiceFrom, that run's handoffs are every acquire's service.
	var service *Sampler
	var serviceSrc Source
	if w.ServiceFrom != nil {
		sc, err := serviceCase(w.ServiceFrom, w.Backend, variant, w.Clients)
		if err != nil {
			return nil, err
		}
		h, _ := sc.Latency(figures.LatencyHandoff)
		if service, err = NewSampler(h); err != nil {
			return nil, err
		}
		serviceSrc = Source{Kind: "measured", Run: w.ServiceFrom.ID, Case: sc.Key.String()}
		fs, freeFn = nil, nil
		freeAt = func(int) *Sampler { return nil }
	}
	// settle iterates from start to a basis consistent with the contention
	// it simulates. Where the measured handoff falls as clients grow, the
	// iteration can cycle between cases without settling: it then stops
	// after 6 steps at the worst state it visited (cycled).
	type state struct {
		basis basisCase
		hs    *Sampler
		sim   *QueueResult
	}
	settle := func(start basisCase) (state, bool, error) {
		basis := start
		var visited []state
		for range 6 {
			hs := service
			if hs == nil {
				h, _ := basis.c.Latency(figures.LatencyHandoff)
				var err error
				if hs, err = NewSampler(h); err != nil {
					return state{}, false, err
				}
			}
			sim, err := w.queue(w.Clients, hs, fs).Simulate()
			if err != nil {
				return state{}, false, err
			}
			visited = append(visited, state{basis, hs, sim})
			next := nearest(ok, max(2, sim.WaitersAtHandoff+1))
			if next.c.Key == basis.c.Key {
				return visited[len(visited)-1], false, nil
			}
			basis = next
		}
		worst := visited[0]
		for _, v := range visited[1:] {
			if v.sim.P(99) > worst.sim.P(99) {
				worst = v
			}
		}
		return worst, true, nil
	}
	// From the case nearest in clients (every client waiting) and from the
	// least contended one: a herd's handoff grows with the waiters it
	// makes, so a naive lock can have two self-consistent states; the
	// answer is the worse, the other is shown beside it.
	hi, hiCycled, err := settle(nearest(ok, float64(w.Clients)))
	if err != nil {
		return nil, err
	}
	lo, loCycled, err := settle(nearest(ok, 2))
	if err != nil {
		return nil, err
	}
	if lo.sim.P(99) > hi.sim.P(99) {
		hi, lo = lo, hi
		hiCycled, loCycled = loCycled, hiCycled
	}
	basis, hs, sim := hi.basis, hi.hs, hi.sim
	p.Cycled = hiCycled || loCycled
	if a, b := min(lo.sim.WaitersAtHandoff, sim.WaitersAtHandoff), max(lo.sim.WaitersAtHandoff, sim.WaitersAtHandoff); !p.Cycled &&
		lo.basis.c.Key != basis.c.Key && b > 0 && b >= TwoStates*a {
		p.OtherState = &State{Basis: Source{Kind: "measured", Run: lo.basis.run.ID, Case: lo.basis.c.Key.String()}, Handoff: lo.hs.Mean(),
			P50: lo.sim.P(50), P99: lo.sim.P(99), Throughput: lo.sim.Throughput, WaitersAtHandoff: lo.sim.WaitersAtHandoff}
	}
	p.BasisClients = basis.c.Clients
	p.Basis = Source{Kind: "measured", Run: basis.run.ID, Case: basis.c.Key.String()}
	p.Service = p.Basis
	if service != nil {
		p.Service = serviceSrc
	}
	switch {
	case w.Clients > maxN:
		p.Extrapolated = true
		p.Range = fmt.Sprintf("EXTRAPOLATED: %d clients is beyond the largest measured N=%d (allowed up to %d)", w.Clients, maxN, limit)
	case w.Clients < minN:
		p.Extrapolated = true
		p.Range = fmt.Sprintf("EXTRAPOLATED: %d clients is below the smallest measured contended N=%d", w.Clients, minN)
	default:
		p.Range = fmt.Sprintf("within the measured range N=%d..%d", minN, maxN)
	}
	what := "handoffs and contended counts"
	if service != nil {
		what = "contended counts"
	}
	if p.Cycled {
		p.Range += fmt.Sprintf("; %s from N=%d, the worst state of a basis that did not settle (%s waiters at a handoff)", what, basis.c.Clients, num(sim.WaitersAtHandoff))
	} else {
		p.Range += fmt.Sprintf("; %s from N=%d, the measured case nearest the simulated %s waiters at a handoff", what, basis.c.Clients, num(sim.WaitersAtHandoff))
	}
	if w.ServiceFrom != nil {
		p.Range += fmt.Sprintf("; every acquire's service (queued or not) drawn from the handoffs of run %s, case %s (--service-from)", p.Service.Run, p.Service.Case)
		if p.Free != nil {
			p.Range += fmt.Sprintf("; uncontended counts from the one-client case (%s)", p.Free.Case)
		}
	} else if p.Idle != nil {
		p.Range += "; " + idleNote(p)
		if p.Free != nil {
			p.Range += fmt.Sprintf("; uncontended counts from the one-client case (%s)", p.Free.Case)
		}
	} else if p.Free != nil {
		p.Range += fmt.Sprintf("; uncontended acquires and counts from the one-client case (%s)", p.Free.Case)
	} else {
		p.Range += "; no one-client case: an acquire of a free lock is taken as one handoff, and every acquisition costs what a contended one does (an upper bound on notifications)"
	}
	p.Handoff = hs.Mean()
	p.Sim = sim
	p.P50, p.P99, p.AtTarget = sim.P(50), sim.P(99), sim.P(w.Percentile)
	p.Overloaded = w.Every > 0 && sim.Offered >= 1
	p.Meets = p.AtTarget <= w.Bound && !p.Overloaded
	if !p.Overloaded {
		if p.P50Interval, p.P99Interval, p.TargetInterval, err = w.waitIntervals(inputs{handoff: hs, free: freeFn}); err != nil {
			return nil, err
		}
	}
	p.load(basis, free)
	if w.Bound > 0 {
		p.MaxClients = maxClients(w, hs, freeAt, limit)
	}
	if p.MaxClients == 0 {
		one, err := w.queue(1, hs, freeAt(1)).Simulate()
		if err != nil {
			return nil, err
		}
		p.OneClient = one.P(w.Percentile)
	}
	return p, nil
}

func (w Workload) queue(clients int, handoff, free *Sampler) Queue {
	q := Queue{Clients: clients, Think: w.Think, Hold: w.Hold, Handoff: handoff, Uncontended: free, Acquisitions: w.Acquisitions, Seed: w.Seed}
	if w.Every > 0 {
		q.Rate = float64(clients) / w.Every.Seconds()
	}
	return q
}

// maxClients bisects the client count (each with the same period or think
// time) for the most that meet the target, up to limit.
func maxClients(w Workload, handoff *Sampler, freeAt func(clients int) *Sampler, limit int) int {
	meets := func(n int) bool {
		q := w.queue(n, handoff, freeAt(n))
		q.Acquisitions = min(cmp.Or(w.Acquisitions, DefaultAcquisitions), 50_000)
		r, err := q.Simulate()
		return err == nil && r.P(w.Percentile) <= w.Bound
	}
	if !meets(1) {
		return 0
	}
	if meets(limit) {
		return limit
	}
	lo, hi := 1, limit // meets(lo), !meets(hi)
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if meets(m) {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// heldRuns says what runs hold, for a refusal: each run's workload and
// backend, and how its clients asked when not back to back.
func heldRuns(runs []*results.Run) string {
	var held []string
	for _, r := range runs {
		h := r.Config.Workload + " on " + string(r.Config.Backend)
		switch {
		case r.Config.Rate > 0:
			h += " (open loop, --rate)"
		case r.Config.Think > 0:
			h += " (--think)"
		}
		if !slices.Contains(held, h) {
			held = append(held, h)
		}
	}
	return cmp.Or(strings.Join(held, ", "), "no run")
}
