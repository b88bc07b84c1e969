package analysis

// The Universal Scalability Law fitted to a variant's throughput against
// clients: X(N) = λN / (1 + σ(N−1) + κN(N−1)). σ is contention (the share
// of work that serialises), κ coherency (crosstalk: work that grows with
// every pair of clients). A herd is crosstalk — each release wakes every
// waiter, and each waiter's reads cost the others — so κ is a single number
// for "how herd-prone".

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/zkbench/zkbench/figures"

	"github.com/zkbench/zkbench/results"
)

// USLUnit reports whether throughput in unit u is clients contending for
// one thing — lock acquisitions, leader terms and handoffs — which the USL
// describes.
// A barrier round takes every participant at once and a failover is one
// per injected fault: neither is a throughput the clients scale.
func USLUnit(u figures.Unit) bool {
	return u == figures.Acquisition || u == figures.Term || u == figures.Handoff
}

// USL is a fitted Universal Scalability Law.
type USL struct {
	Lambda float64 `json:"lambda"`
	Sigma  float64 `json:"sigma"`
	Kappa  float64 `json:"kappa"`
	// CI are 95% intervals (Student's t on the residual degrees of freedom
	// and the Jacobian's covariance), [low, high]; zero when the fit has
	// no degree of freedom left (Exact). Low bounds below 0 are cut at 0,
	// which σ and κ cannot go below.
	LambdaCI [2]float64 `json:"lambda_ci"`
	SigmaCI  [2]float64 `json:"sigma_ci"`
	KappaCI  [2]float64 `json:"kappa_ci"`
	// Points measured, at Counts distinct client counts from MinN to MaxN.
	Points int     `json:"points"`
	Counts int     `json:"counts"`
	MinN   float64 `json:"min_n"`
	MaxN   float64 `json:"max_n"`
	// RMSLog is the root mean square of the log residuals (0.1 ≈ 10%
	// off on average).
	RMSLog float64 `json:"rms_log"`
	// Exact: as many client counts as parameters (3): the curve passes
	// through them whatever the truth, and there is no interval.
	Exact bool `json:"exact"`
}

// At is the fitted throughput at n clients.
func (u USL) At(n float64) float64 {
	return u.Lambda * n / (1 + u.Sigma*(n-1) + u.Kappa*n*(n-1))
}

// Peak is the client count of the highest throughput, √((1−σ)/κ); +Inf
// when κ is 0 (throughput never falls).
func (u USL) Peak() float64 {
	if u.Kappa <= 0 || u.Sigma >= 1 {
		if u.Sigma >= 1 {
			return 1
		}
		return math.Inf(1)
	}
	return math.Sqrt((1 - u.Sigma) / u.Kappa)
}

// String prints the fit for a reader.
func (u USL) String() string {
	ci := func(v [2]float64) string {
		if u.Exact {
			return ""
		}
		return fmt.Sprintf(" [%s, %s]", num(v[0]), num(v[1]))
	}
	s := fmt.Sprintf("λ %s/s%s, σ %s%s, κ %s%s over %d points at N=%s..%s",
		num(u.Lambda), ci(u.LambdaCI), num(u.Sigma), ci(u.SigmaCI), num(u.Kappa), ci(u.KappaCI), u.Points, num(u.MinN), num(u.MaxN))
	if u.Exact {
		s += " (3 client counts: exact fit, no interval, not evidence)"
	}
	return s
}

// ErrUSLPoints: fewer than three distinct client counts.
var ErrUSLPoints = errors.New("analysis: the USL needs throughput at three or more client counts")

// FitUSL fits the USL to throughput x at clients n (one point per repeat)
// by least squares on log throughput (the errors of a throughput are
// relative), σ and κ held at 0 or more.
func FitUSL(n, x []float64) (USL, error) {
	if len(n) != len(x) {
		return USL{}, fmt.Errorf("analysis: %d client counts for %d throughputs", len(n), len(x))
	}
	var distinct []float64
	for i := range n {
		if n[i] < 1 || !(x[i] > 0) || math.IsInf(x[i], 0) {
			return USL{}, fmt.Errorf("analysis: cannot fit the USL to the point (%v, %v)", n[i], x[i])
		}
		if !slices.Contains(distinct, n[i]) {
			distinct = append(distinct, n[i])
		}
	}
	u := USL{Points: len(n), Counts: len(distinct)}
	if len(distinct) < 3 {
		return u, ErrUSLPoints
	}
	u.MinN, u.MaxN = slices.Min(distinct), slices.Max(distinct)
	model := func(p []float64, n float64) float64 {
		return math.Exp(p[0]) * n / (1 + math.Abs(p[1])*(n-1) + math.Abs(p[2])*n*(n-1))
	}
	sse := func(p []float64) float64 {
		var s float64
		for i := range n {
			d := math.Log(x[i]) - math.Log(model(p, n[i]))
			s += d * d
		}
		return s
	}
	// λ starts at the best throughput per client at the fewest clients.
	var l0 float64
	for i := range n {
		if n[i] == u.MinN {
			l0 = max(l0, x[i]/n[i])
		}
	}
	best, bestF := []float64(nil), math.Inf(1)
	for _, s0 := range []float64{0, 0.05, 0.5} {
		for _, k0 := range []float64{0, 1e-4, 1e-2} {
			p0 := []float64{math.Log(l0), s0 + 1e-6, k0 + 1e-9}
			x, f := nelderMead(sse, p0, 4000)
			if f < bestF {
				best, bestF = x, f
			}
		}
	}
	if best == nil {
		return u, errors.New("analysis: the USL fit did not converge")
	}
	u.Lambda, u.Sigma, u.Kappa = math.Exp(best[0]), math.Abs(best[1]), math.Abs(best[2])
	u.RMSLog = math.Sqrt(bestF / float64(len(n)))
	dof := len(n) - 3
	u.Exact = len(distinct) == 3 || dof <= 0
	if u.Exact {
		return u, nil
	}
	// Covariance from the Jacobian of the log residuals in (λ, σ, κ).
	par := []float64{u.Lambda, u.Sigma, u.Kappa}
	at := func(p []float64, n float64) float64 { return math.Log(p[0] * n / (1 + p[1]*(n-1) + p[2]*n*(n-1))) }
	J := mat.NewDense(len(n), 3, nil)
	for j := range 3 {
		h := max(1e-6*math.Abs(par[j]), 1e-9)
		up, dn := slices.Clone(par), slices.Clone(par)
		up[j] += h
		dn[j] = max(dn[j]-h, 0)
		if j == 0 {
			dn[j] = par[j] - h
		}
		for i := range n {
			J.Set(i, j, (at(up, n[i])-at(dn, n[i]))/(up[j]-dn[j]))
		}
	}
	var jtj, cov mat.Dense
	jtj.Mul(J.T(), J)
	if err := cov.Inverse(&jtj); err != nil {
		u.Exact = true // the data cannot tell the parameters apart: no interval
		return u, nil
	}
	s2 := bestF / float64(dof)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(dof)}.Quantile(0.975)
	ci := func(j int) [2]float64 {
		half := t * math.Sqrt(math.Max(s2*cov.At(j, j), 0))
		return [2]float64{math.Max(par[j]-half, 0), par[j] + half}
	}
	u.LambdaCI, u.SigmaCI, u.KappaCI = ci(0), ci(1), ci(2)
	return u, nil
}

// USLFit is one variant's USL over a set of runs.
type USLFit struct {
	Series
	USL USL `json:"usl"`
	// N and X are the measured points (one per repeat).
	N []float64 `json:"n"`
	X []float64 `json:"x"`
	// Runs are the run IDs the points came from; Excluded the cases left
	// out because they were client-bound or ran on a loaded machine
	// (open-loop and think-time runs are not fitted and not listed).
	Runs     []string `json:"runs"`
	Excluded []string `json:"excluded,omitempty"`
	Err      string   `json:"error,omitempty"`
}

// FitUSLs fits the throughput of every series (workload, backend, variant)
// of the closed-loop runs without think time whose clients contend for one thing (USLUnit),
// every repeat a point, leaving out client-bound cases.
func FitUSLs(runs []*results.Run) []*USLFit {
	keyer := NewKeyer(runs)
	byS := map[Series]*USLFit{}
	var order []Series
	for _, r := range runs {
		if r.Config.Rate > 0 || r.Config.Think > 0 {
			continue // an open loop's or a think time's throughput is its schedule, not a capacity
		}
		for i := range r.Results {
			res := &r.Results[i]
			if !USLUnit(res.UnitOf()) {
				continue
			}
			s := keyer.Key(r, res).Series()
			f := byS[s]
			if f == nil {
				f = &USLFit{Series: s}
				byS[s] = f
				order = append(order, s)
			}
			if res.ClientBound != nil {
				f.Excluded = append(f.Excluded, fmt.Sprintf("%s N=%d (run %s): client-bound, %s", s.VariantLabel(), res.Clients, r.ID, res.ClientBound.Detail))
				continue
			}
			if res.Loaded != nil {
				f.Excluded = append(f.Excluded, fmt.Sprintf("%s N=%d (run %s): loaded machine, %s", s.VariantLabel(), res.Clients, r.ID, res.Loaded.Detail))
				continue
			}
			if res.Elapsed <= 0 || res.Throughput <= 0 {
				continue
			}
			f.N = append(f.N, float64(res.Clients))
			f.X = append(f.X, res.Throughput)
			if !slices.Contains(f.Runs, r.ID) {
				f.Runs = append(f.Runs, r.ID)
			}
		}
	}
	slices.SortStableFunc(order, func(a, b Series) int {
		return CompareKeys(a.Key(0), b.Key(0))
	})
	out := make([]*USLFit, 0, len(order))
	for _, s := range order {
		f := byS[s]
		u, err := FitUSL(f.N, f.X)
		f.USL = u
		if err != nil {
			f.Err = err.Error()
		}
		out = append(out, f)
	}
	return out
}
