package workloads

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
)

// TestSpecs: every workload declares a unit, variants with a class, a
// latency to stand for its cases, and parameters whose defaults pass their
// own check; one parameter key means the same type in every workload that
// declares it; names are unique.
func TestSpecs(t *testing.T) {
	seen := map[string]bool{}
	types := map[string]ParamType{}
	for _, s := range Specs() {
		if s.Name == "" || seen[s.Name] {
			t.Fatalf("workload name %q empty or declared twice", s.Name)
		}
		seen[s.Name] = true
		if s.Unit == "" || s.Unit == figures.Operation || s.Summary == "" || s.New == nil {
			t.Errorf("%s: unit %q, summary %q, constructor set %v", s.Name, s.Unit, s.Summary, s.New != nil)
		}
		if len(s.Latencies) == 0 {
			t.Errorf("%s declares no latency", s.Name)
		}
		if len(s.Variants) == 0 {
			t.Errorf("%s declares no variant", s.Name)
		}
		for _, v := range s.Variants {
			if v.Class.Rank() > figures.Other.Rank() {
				t.Errorf("%s/%s: class %q", s.Name, v.Name, v.Class)
			}
		}
		for _, k := range []backends.Kind{backends.ZooKeeper, backends.Etcd} {
			if d := s.DefaultVariants(k); len(d) == 0 || s.CheckVariants(k, d) != nil {
				t.Errorf("%s on %s: default variants %v", s.Name, k, d)
			}
		}
		for _, p := range s.Params {
			if _, err := p.Normalize(p.Default); err != nil {
				t.Errorf("%s: default of %s: %v", s.Name, p.Key, err)
			}
			if p.Help == "" {
				t.Errorf("%s: %s has no help", s.Name, p.Key)
			}
			if typ, ok := types[p.Key]; ok && typ != p.Type {
				t.Errorf("%s: parameter %s has type %v, another workload's has %v", s.Name, p.Key, p.Type, typ)
			}
			types[p.Key] = p.Type
			for _, v := range p.Variants {
				if _, ok := s.Variant(v); !ok {
					t.Errorf("%s: parameter %s names variant %q, which it does not have", s.Name, p.Key, v)
				}
			}
		}
	}
	if !slices.IsSorted(Names()) || len(Names()) != len(Specs()) {
		t.Errorf("Names %v", Names())
	}
}

// TestSpecParams: a parameter reads as given, normalised, or as its
// default; a bad value or an undeclared key is an error that says so.
func TestSpecParams(t *testing.T) {
	s := configSpec()
	cfg := results.Config{Params: map[string]string{ParamSize: "64KB", ParamPoll: "250ms"}}
	if n, err := s.Int(cfg, ParamSize); err != nil || n != 64<<10 {
		t.Errorf("size %d, %v", n, err)
	}
	if d, err := s.Duration(cfg, ParamPoll); err != nil || d.String() != "250ms" {
		t.Errorf("poll %v, %v", d, err)
	}
	if d, err := s.Duration(results.Config{}, ParamStepTimeout); err != nil || d.String() != "1m0s" {
		t.Errorf("default step timeout %v, %v", d, err)
	}
	if _, err := s.Duration(results.Config{Params: map[string]string{ParamPoll: "0s"}}, ParamPoll); !errors.Is(err, ErrBadCase) ||
		!strings.Contains(err.Error(), "positive") {
		t.Errorf("poll 0: %v", err)
	}
	if _, err := s.Int(cfg, ParamRounds); !errors.Is(err, ErrUndeclared) {
		t.Errorf("undeclared parameter: %v", err)
	}
	got, err := revokeSpec().ParamsFor(map[string]string{ParamGrace: "1s"})
	if err != nil || got[ParamGrace] != "1s" || got[ParamRevokeEvery] != "50ms" || got[ParamFence] != FenceOff || len(got) != 5 {
		t.Errorf("ParamsFor = %v, %v", got, err)
	}
	if _, err := lockSpec().ParamsFor(map[string]string{ParamRounds: "3"}); !errors.Is(err, ErrBadCase) {
		t.Errorf("a barrier parameter for the lock: %v", err)
	}
	if n, err := barrierSpec().OpsOr(results.Config{Ops: 7}, ParamRounds); err != nil || n != 7 {
		t.Errorf("OpsOr with --ops: %d, %v", n, err)
	}
}

// TestSpecVariants: defaults, the sweep order by backend, and a refusal
// that says why a variant does not run on a backend.
func TestSpecVariants(t *testing.T) {
	if d := lockSpec().DefaultVariants(backends.Etcd); !slices.Equal(d, []string{variants.Naive, variants.Fair}) {
		t.Errorf("lock defaults %v", d)
	}
	if d := queueSpec().DefaultVariants(backends.ZooKeeper); slices.Contains(d, variants.Native) || d[0] != variants.Naive {
		t.Errorf("queue defaults on ZooKeeper %v: every variant that runs there, naive first", d)
	}
	err := queueSpec().CheckVariants(backends.ZooKeeper, []string{variants.Native})
	if !errors.Is(err, ErrUnknownVariant) || !strings.Contains(err.Error(), "etcd's experimental recipe Queue") {
		t.Errorf("native queue on ZooKeeper: %v", err)
	}
	if err := membershipSpec().CheckVariants(backends.ZooKeeper, []string{variants.Delta}); err != nil {
		t.Errorf("delta on ZooKeeper (a persistent recursive watch): %v", err)
	}
	if err := lockSpec().CheckVariants(backends.Etcd, []string{"bogus"}); !errors.Is(err, ErrUnknownVariant) ||
		!strings.Contains(err.Error(), "naive-children") {
		t.Errorf("unknown variant: %v", err)
	}
	var res results.Result
	res.Variant = variants.Fair
	lockSpec().Declare(&res)
	if res.Workload != "lock" || res.Unit != figures.Acquisition || res.Class != figures.HerdFree || res.Latencies[0] != figures.LatencyAcquire {
		t.Errorf("declared %+v", res)
	}
}
