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

func TestParseClients(t *testing.T) {
	got, err := ParseClients(" 10, 100,10,1000 ")
	if err != nil || len(got) != 3 || got[0] != 10 || got[2] != 1000 {
		t.Errorf("%v %v, want [10 100 1000]", got, err)
	}
	for _, bad := range []string{"", "ten", "0", "100001"} {
		if _, err := ParseClients(bad); err == nil || !strings.HasPrefix(err.Error(), "--clients") {
			t.Errorf("%q: %v, want an error naming --clients", bad, err)
		}
	}
}

func TestParsePIDs(t *testing.T) {
	got, err := ParsePIDs("127.0.0.1:2181=42,127.0.0.1:2182=43")
	if err != nil || got["127.0.0.1:2181"] != 42 || got["127.0.0.1:2182"] != 43 {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"127.0.0.1:2181", "=42", "a=0", "a=x"} {
		if _, err := ParsePIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
