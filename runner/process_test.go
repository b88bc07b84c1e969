package runner

import (
	"strings"
	"testing"

	"github.com/zkbench/zkbench/results"
)

// TestNextHint checks the line a run ends with: client-bound cases send the
// user to other machines, an embedded server to servers of their own, and
// a run on servers of their own with no bound case needs no hint.
func TestNextHint(t *testing.T) {
	bound := results.Result{ClientBound: &results.ClientBound{Reasons: []results.BoundReason{results.BoundCPU}}}
	for _, tc := range []struct {
		name string
		run  results.Run
		want string
	}{
		{"embedded", results.Run{ClusterMode: "embedded", Results: []results.Result{{}, {}}}, "--endpoints"},
		{"client-bound", results.Run{ClusterMode: "embedded", Results: []results.Result{{}, bound}}, "1 of 2 cases were client-bound"},
		{"own servers", results.Run{ClusterMode: "local", Results: []results.Result{{}}}, ""},
	} {
		got := NextHint(&tc.run)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want one with %q", tc.name, got, tc.want)
		}
	}
}
