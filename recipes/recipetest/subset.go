package recipetest

import (
	"slices"
	"testing"
)

// subtest is one named test of a suite, over the suite's environment E.
type subtest[E any] struct {
	name string
	f    func(e E)
}

// pick returns the subtests named in only, in the suite's order, or all of
// them if only is empty. A name in only that the suite lacks fails t, so a
// typo never runs less than it says.
func pick[E any](t *testing.T, subtests []subtest[E], only []string) []subtest[E] {
	t.Helper()
	if len(only) == 0 {
		return subtests
	}
	var out []subtest[E]
	for _, st := range subtests {
		if slices.Contains(only, st.name) {
			out = append(out, st)
		}
	}
	for _, name := range only {
		if !slices.ContainsFunc(subtests, func(st subtest[E]) bool { return st.name == name }) {
			t.Fatalf("recipetest: the suite has no subtest %q", name)
		}
	}
	return out
}
