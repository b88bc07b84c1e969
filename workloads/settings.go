package workloads

import (
	"fmt"
	"time"

	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
)

// caseSettings reads what a case asks of its workload: its variant, from
// the workload's recipe family, and its parameters, as the workload's Spec
// declares them. The first error sticks and every later read returns the
// zero value, so that a run reads all it needs in order and checks err
// once: the error is the one the first failing read would have returned.
type caseSettings struct {
	spec Spec
	c    Case
	err  error
}

// newSettings reads case c of the workload spec declares.
func newSettings(spec Spec, c Case) *caseSettings { return &caseSettings{spec: spec, c: c} }

// settings reads the driver's case.
func (d *driver) settings() *caseSettings { return newSettings(d.spec, d.c) }

// readParam is get's value of parameter key, or the zero value once an
// error stuck.
func readParam[T any](s *caseSettings, get func(results.Config, string) (T, error), key string) T {
	var zero T
	if s.err != nil {
		return zero
	}
	v, err := get(s.c.Config, key)
	if err != nil {
		s.err = err
		return zero
	}
	return v
}

// duration reads a duration parameter (Spec.Duration).
func (s *caseSettings) duration(key string) time.Duration { return readParam(s, s.spec.Duration, key) }

// count reads a whole-number parameter (Spec.Int).
func (s *caseSettings) count(key string) int { return readParam(s, s.spec.Int, key) }

// float reads a numeric parameter (Spec.Float).
func (s *caseSettings) float(key string) float64 { return readParam(s, s.spec.Float, key) }

// choice reads a ParamChoice parameter (Spec.String).
func (s *caseSettings) choice(key string) string { return readParam(s, s.spec.String, key) }

// opsOr reads the case's operation bound (Spec.OpsOr).
func (s *caseSettings) opsOr(key string) int { return readParam(s, s.spec.OpsOr, key) }

// variantOf is the case's variant in family f; an unknown name sticks as
// an error wrapping ErrUnknownVariant.
func variantOf[T any](s *caseSettings, f variants.Family[T]) variants.Variant[T] {
	if s.err != nil {
		return variants.Variant[T]{}
	}
	v, err := f.Lookup(s.c.Variant)
	if err != nil {
		s.err = fmt.Errorf("%w: %w", ErrUnknownVariant, err)
	}
	return v
}
