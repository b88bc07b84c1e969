package analysis

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// Check is one predicted figure against its measurement.
type Check struct {
	Figure    string  `json:"figure"`
	Predicted float64 `json:"predicted"`
	Measured  float64 `json:"measured"`
	// Error is (predicted − measured) / measured; NaN when measured is 0
	// or the figure is not compared.
	Error float64 `json:"error"`
	// NotCompared says why a figure has no error: a latency of a case
	// that was client-bound or ran on a loaded machine, or a figure the
	// model does not predict like for like (a failover's server requests,
	// which count every candidate's heartbeats).
	NotCompared string `json:"not_compared,omitempty"`
}

// MarshalJSON writes an Error that is NaN (no error) as null, which
// encoding/json cannot write as a number.
func (c Check) MarshalJSON() ([]byte, error) {
	type plain Check
	out := struct {
		plain
		Error *float64 `json:"error"`
	}{plain: plain(c)}
	if !math.IsNaN(c.Error) {
		out.Error = &c.Error
	}
	return json.Marshal(out)
}

// Validation sets a prediction against the run that measured its point.
type Validation struct {
	Run    string  `json:"run"`
	Case   string  `json:"case"`
	Checks []Check `json:"checks"`
	// ClientBound is the measured case's client-bound detail, Loaded its
	// loaded-machine detail: its latencies then measure the load
	// generator or the other processes, not the model, and their errors
	// are not given (Check.Error NaN, Check.NotCompared set).
	ClientBound string `json:"client_bound,omitempty"`
	Loaded      string `json:"loaded,omitempty"`
	// Overloaded: the model says the lock cannot keep up (Prediction.
	// Overloaded), so its waits grow with the length of the load and are
	// not compared; MeasuredBehind says whether the run fell behind its
	// schedule too (achieved below 95% of the scheduled rate).
	Overloaded     bool `json:"overloaded,omitempty"`
	MeasuredBehind bool `json:"measured_behind,omitempty"`
}

// Validate compares p with the case of run that measured it (same variant
// and clients).
func Validate(p *Prediction, run *results.Run) (*Validation, error) {
	if err := checkValidationRun(run, p); err != nil {
		return nil, err
	}
	var c *Case
	for _, x := range Cases([]*results.Run{run}) {
		if x.Variant == p.Variant && x.Clients == p.Workload.Clients && x.Backend == p.Backend {
			c = x
		}
	}
	if c == nil {
		return nil, fmt.Errorf("analysis: run %s has no case %s/%s/N=%d to validate against", run.ID, p.Backend, p.Variant, p.Workload.Clients)
	}
	v := &Validation{Run: run.ID, Case: c.Key.String()}
	if b := c.ClientBound(); b != nil {
		v.ClientBound = b.Detail
	}
	if x := c.Loaded(); x != nil {
		v.Loaded = x.Detail
	}
	tput, _ := c.Throughput()
	v.Overloaded = p.Overloaded
	v.MeasuredBehind = p.Workload.Every > 0 && tput < 0.95*p.Workload.Rate()
	lat := c.PrimaryLatency()
	for _, q := range []float64{50, 99} {
		if p.Overloaded {
			break // the waits of an overloaded lock grow with the run: not comparable
		}
		d, ok, err := c.Quantile(lat, q)
		if err != nil {
			return nil, err
		}
		if ok {
			v.add(fmt.Sprintf("wait p%s (ms)", num(q)), Millis(p.Sim.P(q)), Millis(d))
		}
	}
	if h, err := c.Latency(figures.LatencyHandoff); err == nil && h != nil && h.TotalCount() > 0 {
		v.add("handoff mean (ms)", Millis(p.Handoff), h.Mean()/1e6) // the model's input beside the run's
	}
	v.add("acquisitions/s", p.Sim.Throughput, tput)
	for _, l := range p.Load {
		if l.Side != figures.Server.String() {
			continue
		}
		for _, k := range CostKinds {
			if k.Kind != l.Kind {
				continue
			}
			if per, ok := perOpSum(c, k.Server); ok {
				v.add(l.Kind+"/s (server)", l.PerSec, per*tput)
			}
		}
	}
	return v, nil
}

// validationCase is the result of run with key k (its workload, backend,
// variant and clients; the last such case), and its validation before any
// check: client-bound and loaded-machine details set.
func validationCase(run *results.Run, k Key) (*results.Result, *Validation, error) {
	var r *results.Result
	for i := range run.Results {
		x := &run.Results[i]
		if x.Workload == k.Workload && x.Variant == k.Variant && x.Clients == k.Clients && x.Backend == k.Backend {
			r = x
		}
	}
	if r == nil {
		return nil, nil, fmt.Errorf("analysis: run %s has no case %s to validate against", run.ID, k)
	}
	v := &Validation{Run: run.ID, Case: KeyOf(r).String()}
	if b := r.Load.Bound(); b != nil {
		v.ClientBound = b.Detail
	}
	if x := r.Load.Loaded(); x != nil {
		v.Loaded = x.Detail
	}
	return r, v, nil
}

// validationOf is validationCase, and what read reads off the case's
// result; a case where read finds nothing is an error, saying that the case
// lacks it (lacks: "measured no failover").
func validationOf[T any](run *results.Run, k Key, read func(*results.Result) (T, bool, error), lacks string) (*results.Result, *Validation, T, error) {
	var none T
	r, v, err := validationCase(run, k)
	if err != nil {
		return nil, nil, none, err
	}
	x, ok, err := read(r)
	if err != nil {
		return nil, nil, none, err
	}
	if !ok {
		return nil, nil, none, fmt.Errorf("analysis: run %s, case %s %s", run.ID, v.Case, lacks)
	}
	return r, v, x, nil
}

// add appends a check of one figure. A latency (a figure in ms) measured
// where the load generator or other processes set it says nothing of the
// model: it gets no error.
func (v *Validation) add(name string, pred, meas float64) {
	e := math.NaN()
	if meas != 0 {
		e = (pred - meas) / meas
	}
	c := Check{Figure: name, Predicted: pred, Measured: meas, Error: e}
	if strings.HasSuffix(name, "(ms)") {
		switch {
		case v.ClientBound != "":
			c.Error, c.NotCompared = math.NaN(), "client-bound"
		case v.Loaded != "":
			c.Error, c.NotCompared = math.NaN(), "loaded machine"
		}
	}
	v.Checks = append(v.Checks, c)
}

// Write prints the validation.
func (v *Validation) Write(out io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "validation against run %s, case %s (measured)\n", v.Run, v.Case)
	if v.ClientBound != "" {
		fmt.Fprintf(&b, "CLIENT-BOUND, CANNOT VALIDATE LATENCY HERE: the measured case was client-bound (%s): its latencies measure the load generator, not the model, so they have no error below; "+
			"measure the point with fewer clients per machine (--shards) or a machine to itself\n", v.ClientBound)
	} else if v.Loaded != "" {
		fmt.Fprintf(&b, "LOADED MACHINE, CANNOT VALIDATE LATENCY HERE: other processes shared the machine with the measured case (%s): its latencies measure them too, so they have no error below; "+
			"measure the point again on a quiet machine (--require-quiet)\n", v.Loaded)
	}
	if v.Overloaded {
		behind := "but the run kept its schedule: the model is wrong here"
		if v.MeasuredBehind {
			behind = "and the run fell behind its schedule too: both overloaded"
		}
		fmt.Fprintf(&b, "OVERLOADED: the model says the lock cannot keep up, %s; waits grow with the run's length and are not compared\n", behind)
	}
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tpredicted\tmeasured\terror\n")
	for _, c := range v.Checks {
		e := "—"
		switch {
		case c.NotCompared != "":
			e = "not compared (" + c.NotCompared + ")"
		case !math.IsNaN(c.Error):
			e = fmt.Sprintf("%+.0f%%", 100*c.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Figure, num(c.Predicted), num(c.Measured), e)
	}
	tw.Flush()
	_, err := io.WriteString(out, b.String())
	return err
}

// checkValidationRun refuses a run that did not measure the predicted
// point: another arrival process, rate, think or hold.
func checkValidationRun(run *results.Run, p *Prediction) error {
	w := p.Workload
	c := run.Config
	switch {
	case w.Every > 0 && math.Abs(c.Rate-w.Rate()) > 1e-6*w.Rate():
		return fmt.Errorf("run %s ran at --rate %v, the prediction is for %v acquisitions/s (%d clients every %s)", run.ID, c.Rate, w.Rate(), w.Clients, w.Every)
	case w.Every == 0 && c.Rate > 0:
		return fmt.Errorf("run %s is an open loop (--rate %v): the prediction is for the closed loop (--think %s)", run.ID, c.Rate, w.Think)
	case w.Every == 0 && c.Think != w.Think:
		return fmt.Errorf("run %s ran with --think %s, the prediction is for %s", run.ID, c.Think, w.Think)
	case c.Hold != w.Hold:
		return fmt.Errorf("run %s ran with --hold %s, the prediction is for %s", run.ID, c.Hold, w.Hold)
	}
	return nil
}

// WritePlan prints a plan's answer and its validation (nil: none), as
// text, or as one JSON object with asJSON.
func WritePlan(out io.Writer, ans *PlanAnswer, val *Validation, asJSON bool) error {
	return writePlan(out, ans, val, asJSON, struct {
		*PlanAnswer
		Validation *Validation `json:"validation,omitempty"`
	}{ans, val})
}

// encodeJSON prints v as one indented JSON object.
func encodeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writePlan prints a plan's answer, then its validation when there is one,
// as text; or, with asJSON, asObject (the answer's fields and the
// validation's) as one JSON object.
func writePlan(out io.Writer, ans interface{ Write(io.Writer) error }, val *Validation, asJSON bool, asObject any) error {
	if asJSON {
		return encodeJSON(out, asObject)
	}
	if err := ans.Write(out); err != nil {
		return err
	}
	if val != nil {
		fmt.Fprintln(out)
		return val.Write(out)
	}
	return nil
}
