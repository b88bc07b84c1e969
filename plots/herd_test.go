package plots

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// The headline figure comes first, shows only the naive and herd-free
// variants, both sides a backend, and says in words what the results hold
// at the largest client count.
func TestHerdFigure(t *testing.T) {
	runs := loadRuns(t, "lock-zookeeper.json", "lock-etcd.json")
	figs, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	f := Find(figs, HerdName("lock"))
	if f == nil {
		t.Fatal("no lock-herd figure")
	}
	if figs[0] != f {
		t.Errorf("the first figure is %s, want the headline", figs[0].Name)
	}
	if f.Rows != 1 || f.Cols != 2 {
		t.Fatalf("lock-herd is %dx%d, want a panel a backend", f.Rows, f.Cols)
	}
	for _, p := range f.Panels {
		sides := map[string]int{}
		for _, l := range p.Lines {
			if l.Class != figures.Naive && l.Class != figures.HerdFree {
				t.Errorf("%s: line %s of class %q", p.Title, l.Label, l.Class)
			}
			sides[fmt.Sprint(l.Dash)]++
		}
		if sides["0"] == 0 || sides["1"] == 0 || sides["0"] != sides["1"] {
			t.Errorf("%s: %v lines by dash, want a client (solid) and a server (dashed) line a variant", p.Title, sides)
		}
	}
	if len(f.Summary) != 2 {
		t.Fatalf("summary %q: want a line a backend", f.Summary)
	}
	// Each line gives the results' own per-operation counts at the largest
	// client count.
	for _, run := range runs {
		largest := slices.MaxFunc(run.Results, func(a, b results.Result) int { return a.Clients - b.Clients }).Clients
		perOp := map[string]map[string]float64{}
		for _, r := range run.Results {
			if r.Clients == largest {
				perOp[r.Variant] = r.PerOp
			}
		}
		kind := string(run.Results[0].Backend)
		i := slices.IndexFunc(f.Summary, func(s string) bool { return strings.HasPrefix(s, kind+" ") })
		if i < 0 {
			t.Errorf("no summary line for %s in %q", kind, f.Summary)
			continue
		}
		line := f.Summary[i]
		for _, side := range []struct{ name, key string }{{"client side", figures.WatchEvents.Key}, {"server side", figures.ServerWatchEvents.Key}} {
			naive, fair := perOp["naive"][side.key], perOp["fair"][side.key]
			want := fmt.Sprintf("%s: naive %s, fair %s (%s×)", side.name, herdNum(naive), herdNum(fair), herdNum(naive/fair))
			if !strings.Contains(line, want) || !strings.Contains(line, fmt.Sprintf("at %d clients", largest)) {
				t.Errorf("summary %q lacks %q at %d clients", line, want, largest)
			}
		}
	}
}

// Every figure names, in its footer, the run it came from, the zkbench
// that measured it and the servers: backend, how they ran, members and
// their versions, and the client machine.
func TestFooterNamesRunAndServers(t *testing.T) {
	run, err := results.ReadFile(filepath.Join("..", "docs", "runs", "partition-docker-zookeeper", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	figs, err := Build([]*results.Run{run})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, m := range run.Cluster.Members {
		roles[m.Role]++
	}
	if len(run.Cluster.Members) != 3 || roles["leader"] != 1 || roles["follower"] != 2 || run.ClusterMode != "docker" {
		t.Fatalf("the kept run is not the 3-node Docker cluster this test reads: %+v %s", run.Cluster, run.ClusterMode)
	}
	for _, f := range figs {
		if len(f.Footer) != 1 {
			t.Fatalf("%s: footer %q, want one line for one run", f.Name, f.Footer)
		}
		for _, want := range []string{
			"run " + run.ID, run.Tool,
			fmt.Sprintf("%s %s", run.Cluster.Kind, run.Cluster.Members[0].Version),
			"Docker containers", "3 members: leader, 2 followers",
			fmt.Sprintf("clients on %s", run.Environment.Hostname), fmt.Sprintf("%d CPUs", run.Environment.CPUs),
		} {
			if !strings.Contains(f.Footer[0], want) {
				t.Errorf("%s: footer %q lacks %q", f.Name, f.Footer[0], want)
			}
		}
	}
	// Many runs: the first ones named, the rest counted.
	var many []*results.Run
	for i := range 6 {
		r := *run
		r.ID = fmt.Sprintf("run-%d", i)
		many = append(many, &r)
	}
	foot := footerOf(many)
	if len(foot) != maxFooterRuns || !strings.HasPrefix(foot[maxFooterRuns-1], "and 3 more runs: run-3, run-4, run-5") {
		t.Errorf("footer of 6 runs %q", foot)
	}
}

// A count axis starts at 0 and, when every value is 0, runs to 1 with a
// note saying so, instead of -1 to 1.
func TestCountAxisOfZeros(t *testing.T) {
	runs := loadRuns(t, "lock-zookeeper.json")
	for i := range runs[0].Results {
		r := &runs[0].Results[i]
		r.Load = &results.Load{Cores: 2, CPUFraction: 0.25}
		r.SessionsLost = 0
	}
	figs, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	f := Find(figs, "lock-loadgen")
	if f == nil {
		t.Fatal("no lock-loadgen figure")
	}
	i := slices.IndexFunc(f.Panels, func(p *Panel) bool { return strings.Contains(p.Title, "sessions lost") })
	if i < 0 {
		t.Fatal("no sessions lost panel")
	}
	p := f.Panels[i]
	if !p.Y.Count || p.Y.Min != 0 || p.Y.Max != 1 || !slices.Contains(p.Notes, "every value is 0") {
		t.Errorf("sessions lost axis %+v notes %q: want a count axis from 0 to 1 saying every value is 0", p.Y, p.Notes)
	}
	ticks := countTicks{}.Ticks(p.Y.Min, p.Y.Max)
	if len(ticks) != 2 || ticks[0].Label != "0" || ticks[1].Label != "1" {
		t.Errorf("ticks of 0..1 %+v, want 0 and 1", ticks)
	}
	for _, hi := range []float64{3, 14.5, 70, 1234} {
		ts := countTicks{}.Ticks(0, hi)
		if len(ts) < 2 || len(ts) > 7 || ts[0].Value != 0 {
			t.Errorf("ticks of 0..%v: %+v", hi, ts)
		}
		for _, tk := range ts {
			if tk.Value != float64(int(tk.Value)) {
				t.Errorf("ticks of 0..%v: %v is not a whole number", hi, tk.Value)
			}
		}
	}
}
