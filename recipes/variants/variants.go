// Package variants is the one registry of zkbench's recipe variants: for
// every recipe family (locks, elections, double barriers) a table of the
// algorithms a workload can run, by name, with what each promises. A table
// is a function that builds its Family on each call; there are no globals
// and nothing registers itself. Adding a family is adding one table (see
// tables.go).
package variants

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zkbench/zkbench/backends"
)

// Variant names, shared by the families that have such a variant.
const (
	// Naive is the herd-prone variant: every waiter watches one thing.
	Naive = "naive"
	// NaiveChildren is the herd-prone queue: every waiter watches the
	// children of the queue's parent.
	NaiveChildren = "naive-children"
	// Fair is the herd-free variant: each waiter watches its predecessor.
	Fair = "fair"
	// Native is the client library's own recipe, as a baseline.
	Native = "native"
)

// ErrUnknown: no variant of the family has the name asked for.
var ErrUnknown = errors.New("variants: unknown variant")

// Variant is one algorithm of a recipe family. T is what the family's
// workloads build their clients' recipes with: LockMaker for locks,
// recipes.Election for elections, recipes.DoubleBarrierFactory for double
// barriers.
type Variant[T any] struct {
	Name string
	// New builds one client's recipe (see each table for its type).
	New T
	// HerdFree: one state change (a release, a leader loss, a barrier
	// trip) notifies a number of waiters that does not grow with N: one
	// for a lock or an election.
	HerdFree bool
	// FIFO: clients are served in the order they queued. Locks grant in
	// queue order; in an election, a requeued selector queues behind
	// every waiting candidate, so every candidate gets a term in turn
	// (round-robin).
	FIFO bool
	// ClientCounts: backends/instrument sees the recipe's requests,
	// watches and wake-ups. False for native, whose requests go straight
	// to the library's client: its client-side counts are absent, not
	// zero, and only the servers' counts show its herd behaviour.
	ClientCounts bool
	// Backends the variant runs on; nil means every backend. On another
	// backend its calls fail with an error matching recipes.ErrUnsupported.
	Backends []backends.Kind
	// ListedName is the longest child name a ZooKeeper listing of the
	// variant holds, which sizes each session's receive buffer
	// (zookeeper.RecvBufferForNames): ShortName for recipes whose nodes
	// are Session.Enqueue's bare sequence numbers; 0 for the default,
	// CreateSequential's protected names and the libraries' own (up to 52
	// bytes).
	ListedName int
}

// ShortName is the length of Session.Enqueue's ZooKeeper names: the
// 10-digit sequence number.
const ShortName = 10

// LongestListedName is the longest child name a ZooKeeper listing of any
// of vs holds: 0 (the default, up to 52 bytes) if any of them leaves
// ListedName unset.
func LongestListedName[T any](vs ...Variant[T]) int {
	longest := 0
	for _, v := range vs {
		if v.ListedName == 0 {
			return 0
		}
		longest = max(longest, v.ListedName)
	}
	return longest
}

// Supports reports whether v runs on backend kind k.
func (v Variant[T]) Supports(k backends.Kind) bool {
	return v.Backends == nil || slices.Contains(v.Backends, k)
}

// Family is one recipe family's table of variants.
type Family[T any] struct {
	// Name is the family's name, as in error messages: "lock".
	Name     string
	variants []Variant[T]
}

// newFamily returns the family called name with the given variants.
func newFamily[T any](name string, vs ...Variant[T]) Family[T] {
	return Family[T]{Name: name, variants: vs}
}

// Names returns the family's variant names, sorted.
func (f Family[T]) Names() []string {
	names := make([]string, 0, len(f.variants))
	for _, v := range f.variants {
		names = append(names, v.Name)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the variant called name, or an error matching ErrUnknown
// that names the family and lists the known names.
func (f Family[T]) Lookup(name string) (Variant[T], error) {
	for _, v := range f.variants {
		if v.Name == name {
			return v, nil
		}
	}
	return Variant[T]{}, fmt.Errorf("%w: %s variant %q (known: %s)", ErrUnknown, f.Name, name, strings.Join(f.Names(), ", "))
}

// All returns every variant, in the order of Names.
func (f Family[T]) All() []Variant[T] {
	out := slices.Clone(f.variants)
	slices.SortFunc(out, func(a, b Variant[T]) int { return strings.Compare(a.Name, b.Name) })
	return out
}
