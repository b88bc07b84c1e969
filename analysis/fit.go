package analysis

// Capacity planning from a sweep: fit how each cost grows with clients,
// say what request rate the servers must carry at a client count, and set
// it against the cluster's calibrated capacity (plan.go). The lock as a
// queue is queue.go and predict.go; the USL fit usl.go.

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
)

// Growth models of a figure y against clients N.
const (
	// Constant: y does not change with N over the measured range (it moves
	// less than FlatTolerance of its mean).
	Constant = "constant"
	// Linear: y = A + B·N, least squares on the raw data.
	Linear = "linear"
	// Power: y = A·N^B, least squares on log y against log N.
	Power = "power"
)

// FlatTolerance: a figure whose fitted change over the measured range is
// below this fraction of its mean is reported as constant.
const FlatTolerance = 0.05

// ErrTooFewPoints: fewer than two distinct client counts.
var ErrTooFewPoints = errors.New("analysis: need measurements at two or more client counts")

// Candidate is one model fitted to the data.
type Candidate struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
	// R2 is the coefficient of determination on the raw data (not the
	// log-log data the power law was fitted on), so models compare fairly.
	R2 float64 `json:"r2"`
	OK bool    `json:"ok"`
}

// Fit is how a figure grows with clients: the better of a linear and a
// power-law model, or constant when it does not grow.
type Fit struct {
	Model string  `json:"model"`
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	R2    float64 `json:"r2"`
	// Points is the number of measurements, from MinN to MaxN clients.
	Points int       `json:"points"`
	MinN   float64   `json:"min_n"`
	MaxN   float64   `json:"max_n"`
	Linear Candidate `json:"linear"`
	Power  Candidate `json:"power"`
}

// FitGrowth fits y against n (client counts, any order, n > 0) with both
// models and picks the one with the higher R² on the raw data. With only two
// client counts any model fits exactly; the fit is still given but Exact
// says it is not evidence.
func FitGrowth(n, y []float64) (Fit, error) {
	if len(n) != len(y) {
		return Fit{}, fmt.Errorf("analysis: %d client counts for %d values", len(n), len(y))
	}
	f := Fit{Points: len(n)}
	if len(n) > 0 {
		f.MinN, f.MaxN = floats.Min(n), floats.Max(n)
	}
	if len(n) < 2 || f.MinN == f.MaxN {
		return f, ErrTooFewPoints
	}
	for i := range n {
		if n[i] <= 0 || math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			return f, fmt.Errorf("analysis: cannot fit point (%v, %v)", n[i], y[i])
		}
	}
	mean := stat.Mean(y, nil)

	a, b := stat.LinearRegression(n, y, nil, false)
	f.Linear = Candidate{A: a, B: b, R2: rSquared(n, y, func(x float64) float64 { return a + b*x }), OK: true}

	allPositive := floats.Min(y) > 0
	if allPositive {
		ln, ly := logs(n), logs(y)
		la, pb := stat.LinearRegression(ln, ly, nil, false)
		pa := math.Exp(la)
		f.Power = Candidate{A: pa, B: pb, R2: rSquared(n, y, func(x float64) float64 { return pa * math.Pow(x, pb) }), OK: true}
	}

	change := math.Abs(b * (f.MaxN - f.MinN))
	if spread := floats.Max(y) - floats.Min(y); spread == 0 || (mean != 0 && change < FlatTolerance*math.Abs(mean) && spread < 2*FlatTolerance*math.Abs(mean)) {
		f.Model, f.A, f.B, f.R2 = Constant, mean, 0, f.Linear.R2
		if spread == 0 {
			f.R2 = 1
		}
		return f, nil
	}
	f.Model, f.A, f.B, f.R2 = Linear, f.Linear.A, f.Linear.B, f.Linear.R2
	if f.Power.OK && f.Power.R2 > f.Linear.R2 {
		f.Model, f.A, f.B, f.R2 = Power, f.Power.A, f.Power.B, f.Power.R2
	}
	return f, nil
}

// Exact reports a fit through two client counts: it passes through both
// points whatever the truth, so its R² says nothing.
func (f Fit) Exact() bool { return f.Points < 3 }

// At is the fitted value at n clients.
func (f Fit) At(n float64) float64 {
	switch f.Model {
	case Constant:
		return f.A
	case Linear:
		return f.A + f.B*n
	case Power:
		return f.A * math.Pow(n, f.B)
	}
	return math.NaN()
}

// Extrapolated reports whether n is outside the measured range.
func (f Fit) Extrapolated(n float64) bool { return n < f.MinN || n > f.MaxN }

// Solve returns the client count at which the fit reaches y, and false when
// it never does (constant, or moving away from y).
func (f Fit) Solve(y float64) (float64, bool) {
	var n float64
	switch f.Model {
	case Linear:
		if f.B == 0 {
			return 0, false
		}
		n = (y - f.A) / f.B
	case Power:
		if f.B == 0 || f.A <= 0 || y <= 0 {
			return 0, false
		}
		n = math.Pow(y/f.A, 1/f.B)
	default:
		return 0, false
	}
	if n <= 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, false
	}
	return n, true
}

// Grows reports whether the fit rises with N.
func (f Fit) Grows() bool { return (f.Model == Linear || f.Model == Power) && f.B > 0 }

// Formula prints the fitted model: "1.02 + 0.98·N", "0.41·N^1.52",
// "constant 1".
func (f Fit) Formula() string {
	switch f.Model {
	case Constant:
		return "constant " + num(f.A)
	case Linear:
		if num(f.A) == "0" {
			return num(f.B) + "·N"
		}
		sign, b := "+", f.B
		if b < 0 {
			sign, b = "−", -b
		}
		return fmt.Sprintf("%s %s %s·N", num(f.A), sign, num(b))
	case Power:
		return fmt.Sprintf("%s·N^%.2f", num(f.A), f.B)
	}
	return "no fit"
}

// String prints the fit for a reader: "1.02 + 0.98·N (linear, R² 0.999)",
// "0.41·N^1.52 (power law, R² 0.997)", "constant 1 (no growth over
// N=2..64)".
func (f Fit) String() string {
	exact := ""
	if f.Exact() {
		exact = ", 2 client counts: exact, not evidence"
	}
	switch f.Model {
	case Constant:
		return fmt.Sprintf("%s (no growth over N=%s..%s)", f.Formula(), num(f.MinN), num(f.MaxN))
	case Linear:
		return fmt.Sprintf("%s (linear, R² %.3f%s)", f.Formula(), f.R2, exact)
	case Power:
		return fmt.Sprintf("%s (power law, R² %.3f%s)", f.Formula(), f.R2, exact)
	}
	return "no fit"
}

// num prints 3 significant digits without exponent for everyday sizes.
func num(v float64) string {
	if v != 0 && (math.Abs(v) >= 1e6 || math.Abs(v) < 1e-3) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

func logs(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Log(x)
	}
	return out
}

// rSquared is 1 - SSres/SStot of model on the raw data (1 when y is
// constant and the model matches it).
func rSquared(n, y []float64, model func(float64) float64) float64 {
	mean := stat.Mean(y, nil)
	var res, tot float64
	for i := range n {
		d := y[i] - model(n[i])
		res += d * d
		t := y[i] - mean
		tot += t * t
	}
	if tot == 0 {
		if res == 0 {
			return 1
		}
		return 0
	}
	return 1 - res/tot
}
