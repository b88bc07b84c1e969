package analysis

import (
	"math"
	"slices"
)

// nelderMead minimises f from x0 by the Nelder–Mead simplex (reflection 1,
// expansion 2, contraction ½, shrink ½), for at most iters iterations or
// until the simplex's values agree to 1e-14.
func nelderMead(f func([]float64) float64, x0 []float64, iters int) ([]float64, float64) {
	d := len(x0)
	pts := make([][]float64, d+1)
	vals := make([]float64, d+1)
	for i := range pts {
		pts[i] = slices.Clone(x0)
		if i > 0 {
			step := 0.1 * math.Abs(x0[i-1])
			if step == 0 {
				step = 0.01
			}
			pts[i][i-1] += step
		}
		vals[i] = f(pts[i])
	}
	at := func(c []float64, t float64, w []float64) []float64 {
		out := make([]float64, d)
		for j := range out {
			out[j] = c[j] + t*(w[j]-c[j])
		}
		return out
	}
	for range iters {
		idx := []int{}
		for i := range pts {
			idx = append(idx, i)
		}
		slices.SortFunc(idx, func(a, b int) int { return cmpFloat(vals[a], vals[b]) })
		p2, v2 := make([][]float64, d+1), make([]float64, d+1)
		for i, k := range idx {
			p2[i], v2[i] = pts[k], vals[k]
		}
		pts, vals = p2, v2
		if math.Abs(vals[d]-vals[0]) <= 1e-14*(1+math.Abs(vals[0])) {
			break
		}
		c := make([]float64, d)
		for _, p := range pts[:d] {
			for j := range c {
				c[j] += p[j] / float64(d)
			}
		}
		r := at(c, -1, pts[d])
		fr := f(r)
		switch {
		case fr < vals[0]:
			if e := at(c, -2, pts[d]); f(e) < fr {
				pts[d], vals[d] = e, f(e)
			} else {
				pts[d], vals[d] = r, fr
			}
		case fr < vals[d-1]:
			pts[d], vals[d] = r, fr
		default:
			k := at(c, 0.5, pts[d])
			if fk := f(k); fk < vals[d] {
				pts[d], vals[d] = k, fk
			} else {
				for i := 1; i <= d; i++ {
					pts[i] = at(pts[0], 0.5, pts[i])
					vals[i] = f(pts[i])
				}
			}
		}
	}
	i := 0
	for k := range vals {
		if vals[k] < vals[i] {
			i = k
		}
	}
	return pts[i], vals[i]
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
