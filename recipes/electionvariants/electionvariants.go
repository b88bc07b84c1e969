// Package electionvariants names the leader election recipes a workload can
// run, without globals: Variants builds the table on each call.
//
//	naive   create-to-grab one leader node; every candidate and observer
//	        watches it (herd)
//	fair    sequential candidates, each watches its predecessor; observers
//	        watch only the leader's node
//	native  etcd's concurrency.Election, as a baseline (etcd only; on
//	        ZooKeeper every call fails with recipes.ErrUnsupported)
package electionvariants

import (
	"errors"
	"fmt"
	"sort"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/fair"
	"github.com/zkbench/zkbench/recipes/naive"
	"github.com/zkbench/zkbench/recipes/native"
)

// Variant names.
const (
	Naive  = "naive"
	Fair   = "fair"
	Native = "native"
)

// ErrUnknown: no election variant has the name asked for.
var ErrUnknown = errors.New("electionvariants: unknown election variant")

// Variant is one election algorithm with its latch, selector and observer.
type Variant struct {
	Name     string
	Election recipes.Election
	// HerdFree: a leader loss wakes one candidate, not all of them.
	HerdFree bool
	// RoundRobin: a requeued selector queues behind every waiting candidate,
	// so every candidate gets a term in turn.
	RoundRobin bool
	// ClientCounts: backends/instrument sees the recipe's requests, watches
	// and wake-ups (false for native: its counts are absent, not zero).
	ClientCounts bool
	// Supports reports whether the variant runs on a backend kind.
	Supports func(backends.Kind) bool
}

func anyBackend(backends.Kind) bool { return true }

// Variants returns every election variant by name.
func Variants(opts ...recipes.Option) map[string]Variant {
	return map[string]Variant{
		Naive: {Name: Naive, Election: naive.Election(opts...), ClientCounts: true, Supports: anyBackend},
		Fair: {Name: Fair, Election: fair.Election(opts...), HerdFree: true, RoundRobin: true,
			ClientCounts: true, Supports: anyBackend},
		Native: {Name: Native, Election: native.Election(opts...), HerdFree: true, RoundRobin: true,
			Supports: func(k backends.Kind) bool { return k == backends.Etcd }},
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
