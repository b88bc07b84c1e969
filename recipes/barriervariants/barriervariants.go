// Package barriervariants names the double barrier recipes a workload can
// run, without globals: Variants builds the table on each call.
//
//	naive  every participant watches the members list (herd): each arrival
//	       and departure wakes everyone still waiting
//	fair   the ZooKeeper recipes page's barrier: enter waits on a ready node
//	       the N-th arrival makes; on leave the lowest waits on the highest
//	       and the rest on the lowest
package barriervariants

import (
	"errors"
	"fmt"
	"sort"

	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/fair"
	"github.com/zkbench/zkbench/recipes/naive"
)

// Variant names.
const (
	Naive = "naive"
	Fair  = "fair"
)

// ErrUnknown: no barrier variant has the name asked for.
var ErrUnknown = errors.New("barriervariants: unknown barrier variant")

// Variant is one double barrier algorithm.
type Variant struct {
	Name string
	New  recipes.DoubleBarrierFactory
	// HerdFree: notifications per participant per round do not grow with N.
	HerdFree bool
}

// Variants returns every double barrier variant by name.
func Variants(opts ...recipes.Option) map[string]Variant {
	return map[string]Variant{
		Naive: {Name: Naive, New: naive.NewDoubleBarrierFactory(opts...)},
		Fair:  {Name: Fair, New: fair.NewDoubleBarrierFactory(opts...), HerdFree: true},
	}
}

// Names returns the variant names, sorted.
func Names() []string {
	vs := Variants()
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the variant called name, or an error matching ErrUnknown
// that lists the known names.
func Lookup(name string, opts ...recipes.Option) (Variant, error) {
	v, ok := Variants(opts...)[name]
	if !ok {
		return Variant{}, fmt.Errorf("%w %q (known: %v)", ErrUnknown, name, Names())
	}
	return v, nil
}
