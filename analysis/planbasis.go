package analysis

// What the plans read off kept sweeps (the config center's, configplan.go,
// and the failover's, failoverplan.go) share in reading them: the cases
// they read and why others are left out, and a case's histogram
// (plantext.go: in writing their answers).

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// planPoints reads the cases of workload in runs as a plan's points, by
// backend and variant, and lists the cases left out with why. point makes
// r's point (key is r's case key), or says why r is left out; a case it
// accepts is still left out when it was client-bound or ran on a loaded
// machine. An error from point ends the reading.
func planPoints[P any](runs []*results.Run, workload string,
	point func(run *results.Run, r *results.Result, key string) (p P, why string, err error)) (map[backends.Kind]map[string][]P, []string, error) {
	out := map[backends.Kind]map[string][]P{}
	var left []string
	for _, run := range runs {
		for i := range run.Results {
			r := &run.Results[i]
			if r.Workload != workload {
				continue
			}
			key := KeyOf(r).String()
			p, why, err := point(run, r, key)
			if err != nil {
				return nil, nil, err
			}
			if why == "" {
				if b := r.Load.Bound(); b != nil {
					why = fmt.Sprintf("client-bound (%s)", b.Detail)
				} else if x := r.Load.Loaded(); x != nil {
					why = fmt.Sprintf("loaded machine (%s)", x.Detail)
				}
			}
			if why != "" {
				left = append(left, fmt.Sprintf("run %s, case %s: %s", run.ID, key, why))
				continue
			}
			if out[r.Backend] == nil {
				out[r.Backend] = map[string][]P{}
			}
			out[r.Backend][r.Variant] = append(out[r.Backend][r.Variant], p)
		}
	}
	return out, left, nil
}

// recorded is r's histogram name, decoded; false when r recorded none.
func recorded(r *results.Result, name figures.Latency) (*hdrhistogram.Histogram, bool, error) {
	hs := r.Latency[name]
	if hs == nil || hs.Count == 0 {
		return nil, false, nil
	}
	h, err := hs.Decode()
	return h, err == nil, err
}

// countFigure is one figure a plan reads off a point's counts of type C.
type countFigure[C any] struct {
	figure string
	of     func(C) float64
}
