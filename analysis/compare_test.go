package analysis

import (
	"bytes"
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

func load(t *testing.T, name string) *results.Run {
	t.Helper()
	r, err := results.ReadFile(testresults.Path(name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCompare(t *testing.T) {
	a := load(t, "lock-zookeeper.json")
	b := load(t, "lock-zookeeper.json")
	b.ID = "b"
	b.Config.Hold = 2 * time.Millisecond
	b.Config.Params = map[string]string{}
	maps.Copy(b.Config.Params, a.Config.Params)
	b.Config.Params["conns"] = "7"
	b.Config.Params["churn"] = "3"
	var kept []results.Result
	for _, r := range b.Results {
		switch {
		case r.Variant == "native" && r.Clients == 64:
			continue // only in A
		case r.Variant == "naive" && r.Clients == 64:
			r.Throughput *= 1.5
			r.PerOp = map[string]float64{"watch_events": r.PerOp["watch_events"] / 2}
			r.Server = nil // servers not scraped in B
		}
		kept = append(kept, r)
	}
	b.Results = kept

	c, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cases) != len(a.Results)-1 || len(c.OnlyA) != 1 || c.OnlyA[0].Variant != "native" || len(c.OnlyB) != 0 {
		t.Fatalf("%d cases, only A %v, only B %v", len(c.Cases), c.OnlyA, c.OnlyB)
	}
	// Each parameter apart, in order, a parameter one run lacks as unset.
	if want := []string{"hold: 1ms in A, 2ms in B", "param churn: unset in A, 3 in B", "param conns: " + cmp.Or(a.Config.Params["conns"], "unset") + " in A, 7 in B"}; !slices.Equal(c.Setup, want) {
		t.Errorf("setup differences %q", c.Setup)
	}
	for _, cs := range c.Cases {
		rows := map[string]FigureChange{}
		for _, r := range cs.Rows {
			rows[r.ID] = r
		}
		want := 1.0
		if cs.Variant == "naive" && cs.Clients == 64 {
			want = 1.5
			if r := rows["server_requests/op"]; !r.HasA || r.HasB {
				t.Errorf("a figure only A measured: %+v", r)
			}
			if q, ok := rows["watch_events/op"].Ratio(); !ok || q != 0.5 {
				t.Errorf("watch events ratio %v", q)
			}
		}
		if q, ok := rows["throughput"].Ratio(); !ok || math.Abs(q-want) > 1e-12 {
			t.Errorf("%v: throughput ratio %v, want %v", cs.Key, q, want)
		}
		for _, id := range []string{"p50", "p99", "p99.9"} {
			if _, ok := rows[id]; !ok {
				t.Errorf("%v: no %s row", cs.Key, id)
			}
		}
	}

	var out bytes.Buffer
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"hold: 1ms in A, 2ms in B", "lock / zookeeper / naive / 64 clients", "+50.0%", "-50.0%",
		"Only in A:", "lock / zookeeper / native / 64 clients", "p99 acquire", "p99.9 handoff"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestCompareAcrossBackends(t *testing.T) {
	c, err := Compare(load(t, "lock-zookeeper.json"), load(t, "lock-etcd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cases) != len(testresults.LockClients)*3 || len(c.OnlyA)+len(c.OnlyB) != 0 {
		t.Fatalf("%d cases matched, %d+%d unmatched", len(c.Cases), len(c.OnlyA), len(c.OnlyB))
	}
	if c.Cases[0].Backend != "zookeeper vs etcd" {
		t.Errorf("case backend %q", c.Cases[0].Backend)
	}
	if !strings.Contains(strings.Join(c.Setup, "\n"), "matched across backends") {
		t.Errorf("setup %q does not say cases are matched across backends", c.Setup)
	}
	// Different workloads share nothing.
	c, err = Compare(load(t, "lock-zookeeper.json"), load(t, "barrier-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cases) != 0 || len(c.OnlyA) == 0 || len(c.OnlyB) == 0 {
		t.Fatalf("lock vs barrier: %d cases", len(c.Cases))
	}
}

// A case client-bound in either run says so above its figures; one that
// ran on a loaded machine, not client-bound, is marked as such, not as
// client-bound.
func TestCompareMarksClientBoundAndLoaded(t *testing.T) {
	for _, tc := range []struct {
		name, want, wrong string
		mark              func(r *results.Result)
	}{
		{"client-bound", "CLIENT-BOUND in B: starved (ran 26%", "", func(r *results.Result) {
			r.ClientBound = &results.ClientBound{Reasons: []results.BoundReason{results.BoundStarved}, Detail: "starved (ran 26% and waited for a CPU 83% of 2 cores)"}
		}},
		{"loaded", "LOADED MACHINE in B: other processes took 62% of 2 cores", "CLIENT-BOUND in B: loaded", func(r *results.Result) {
			r.ClientBound = nil
			r.Loaded = &results.Loaded{OthersShare: 0.62, Detail: "other processes took 62% of 2 cores"}
		}},
	} {
		a := load(t, "lock-zookeeper.json")
		b := load(t, "lock-zookeeper.json")
		b.ID = "b"
		for i := range b.Results {
			if r := &b.Results[i]; r.Variant == "fair" {
				tc.mark(r)
			}
		}
		c, err := Compare(a, b)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := c.Write(&out); err != nil {
			t.Fatal(err)
		}
		for _, cs := range c.Cases {
			if (cs.BoundB != "") != (cs.Variant == "fair") || cs.BoundA != "" {
				t.Errorf("%s: %v: bound A %q, B %q", tc.name, cs.Key, cs.BoundA, cs.BoundB)
			}
		}
		if !strings.Contains(out.String(), tc.want) || (tc.wrong != "" && strings.Contains(out.String(), tc.wrong)) {
			t.Errorf("%s: comparison does not mark the cases as %q:\n%s", tc.name, tc.want, out.String())
		}
	}
}
