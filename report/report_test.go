package report

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

var outDir = flag.String("out", "", "also write the report into this folder")

func loadRuns(t *testing.T, names ...string) []*results.Run {
	t.Helper()
	var runs []*results.Run
	for _, n := range names {
		r, err := results.ReadFile(testresults.Path(n))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}

func TestWrite(t *testing.T) {
	t.Parallel()
	runs := loadRuns(t, "lock-zookeeper.json", "lock-etcd.json", "barrier-zookeeper.json")
	dir := *outDir
	if dir == "" {
		dir = t.TempDir()
	}
	paths, err := Write(runs, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 10 {
		t.Fatalf("wrote only %v", paths)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Setup and environment", "## Findings at a glance", "## Summary: lock",
		"## Plots", "## Capacity planning", "### Server calibration", "SYNTHETIC TEST INPUT",
		"(plots/lock-fanout.png)",
		"lock, naive on zookeeper: watch events per acquisition GROW with clients",
		"lock, fair on etcd: watch events per acquisition stay bounded as clients grow"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// The HTML page stands alone: every plot inlined, nothing fetched.
	if n := bytes.Count(page, []byte(`src="data:image/png;base64,`)); n != bytes.Count(md, []byte("](plots/")) || n == 0 {
		t.Errorf("HTML inlines %d images, Markdown links %d", n, bytes.Count(md, []byte("](plots/")))
	}
	if bytes.Contains(page, []byte(`src="http`)) || bytes.Contains(page, []byte(`href="http`)) {
		t.Error("HTML refers to the network")
	}
}

// mdTables parses the Markdown tables under each "## " heading: section ->
// subsection -> rows of cells (header first).
func mdTables(t *testing.T, md []byte) map[string]map[string][][]string {
	out := map[string]map[string][][]string{}
	var sec, sub string
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			sec, sub = strings.TrimPrefix(line, "## "), ""
		case strings.HasPrefix(line, "### "):
			sub = strings.TrimPrefix(line, "### ")
		case strings.HasPrefix(line, "|---"):
		case strings.HasPrefix(line, "| "):
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if out[sec] == nil {
				out[sec] = map[string][][]string{}
			}
			out[sec][sub] = append(out[sec][sub], cells)
		}
	}
	return out
}

// TestMarkdownNumbersMatchResults parses the numbers back out of the
// Markdown summary tables and compares them with the results file, read
// directly (not through package analysis).
func TestMarkdownNumbersMatchResults(t *testing.T) {
	t.Run("synthetic", func(t *testing.T) {
		checkNumbers(t, loadRuns(t, "lock-zookeeper.json", "lock-etcd.json", "barrier-zookeeper.json"), 500)
	})
	t.Run("measured", func(t *testing.T) {
		checkNumbers(t, loadRuns(t, testresults.Measured...), 200)
	})
}

func checkNumbers(t *testing.T, runs []*results.Run, atLeast int) {
	d, err := Build(runs, Options{NoPlots: true})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := d.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	tables := mdTables(t, md.Bytes())
	checked := 0
	for _, run := range runs {
		for _, res := range run.Results {
			sec := tables["Summary: "+res.Workload]
			if sec == nil {
				t.Fatalf("no summary section for %s", res.Workload)
			}
			for _, sub := range []string{"Throughput and latency", "Cost per " + unitOf(res.Workload)} {
				rows := sec[sub]
				if len(rows) < 2 {
					t.Fatalf("no table %q for %s", sub, res.Workload)
				}
				header := rows[0]
				row := findRow(rows[1:], string(res.Backend), res.Variant, res.Clients)
				if row == nil {
					t.Fatalf("%s: no row for %s/%s/%d", sub, res.Backend, res.Variant, res.Clients)
				}
				for i, col := range header {
					want, ok := expected(t, &res, col)
					if !ok {
						continue
					}
					got := row[i]
					if got == NotMeasured {
						t.Errorf("%s %s/%s/%d: %q shows not measured, results say %v", sub, res.Backend, res.Variant, res.Clients, col, want)
						continue
					}
					v, err := strconv.ParseFloat(got, 64)
					if err != nil {
						t.Fatalf("%q: cell %q is not a number", col, got)
					}
					if math.Abs(v-want) > 1e-3*math.Abs(want)+1e-9 {
						t.Errorf("%s/%s/%d %q: report says %v, results file %v", res.Backend, res.Variant, res.Clients, col, v, want)
					}
					checked++
				}
			}
		}
	}
	if checked < atLeast {
		t.Fatalf("compared only %d numbers", checked)
	}
	t.Logf("compared %d numbers", checked)
}

func unitOf(workload string) string {
	switch workload {
	case "lock":
		return "acquisition"
	case "barrier":
		return "round"
	}
	return "operation"
}

func findRow(rows [][]string, backend, variant string, clients int) []string {
	for _, r := range rows {
		if r[0] == backend && r[1] == variant && r[2] == strconv.Itoa(clients) {
			return r
		}
	}
	return nil
}

// expected reads the figure a column names straight from a result (one
// repeat per case in these files).
func expected(t *testing.T, r *results.Result, col string) (float64, bool) {
	t.Helper()
	if strings.HasPrefix(col, "throughput") {
		return r.Throughput, true
	}
	if col == "ops ok" {
		return float64(r.Ops.Succeeded), true
	}
	for _, p := range []struct {
		prefix string
		q      float64
	}{{"p50 ", 50}, {"p99 ", 99}, {"p99.9 ", 99.9}} {
		if name, ok := strings.CutPrefix(col, p.prefix); ok {
			name = strings.TrimSuffix(name, " (ms)")
			h := r.Latency[figures.Latency(name)]
			if h == nil {
				t.Fatalf("column %q: result has no %q histogram", col, name)
			}
			hd, err := h.Decode()
			if err != nil {
				t.Fatal(err)
			}
			return float64(hd.ValueAtQuantile(p.q)) / 1e6, true
		}
	}
	keys := map[string]string{
		"watch events (client)": "watch_events", "watch events (server)": "server_watch_events",
		"wasted wake-ups": "wasted_wakeups", "requests (client)": "requests", "requests (server)": "server_requests",
		"writes (server)": "server_writes", "reads (server)": "server_reads",
	}
	for label, key := range keys {
		if strings.HasPrefix(col, label+" (") {
			v, ok := r.PerOp[key]
			return v, ok
		}
	}
	return 0, false
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1: "1", 1234.5678: "1235", 27502.5: "27500", 0.123456: "0.1235", 63: "63", 1e-7: "1e-07", -2.5: "-2.5",
	} {
		if got := Num(v); got != want {
			t.Errorf("Num(%v) = %q, want %q", v, got, want)
		}
	}
	if Num(math.NaN()) != NotMeasured {
		t.Error("NaN is printed")
	}
	_ = fmt.Sprint()
}

// TestMeasuredLockReport builds the report of a real lock sweep on both
// backends and checks the findings a reader sees first.
func TestMeasuredLockReport(t *testing.T) {
	t.Parallel()
	d, err := Build(loadRuns(t, testresults.Measured...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	md := buf.Bytes()
	for _, want := range []string{
		"lock, naive on zookeeper: watch events per acquisition GROW with clients",
		"lock, naive on etcd: watch events per acquisition GROW with clients",
		"lock, fair on zookeeper: watch events per acquisition stay bounded",
		"lock, fair on etcd: watch events per acquisition stay bounded",
		"lock, native on zookeeper: watch events per acquisition stay bounded",
		"lock, native on etcd: watch events per acquisition stay bounded",
		"](plots/lock-fanout.png)",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if bytes.Contains(md, []byte("SYNTHETIC")) {
		t.Error("a measured report is marked synthetic")
	}
}

// A client-bound case is marked at a glance, in the load generator table
// with its reason, and left out of the capacity answers.
func TestReportMarksClientBound(t *testing.T) {
	runs := loadRuns(t, "lock-zookeeper.json")
	largest := 0
	for _, r := range runs[0].Results {
		largest = max(largest, r.Clients)
	}
	for i := range runs[0].Results {
		r := &runs[0].Results[i]
		r.Load = &results.Load{Cores: 2, CPUFraction: 0.4, Sched: results.Spread{Count: 100, P99: time.Millisecond}}
		if r.Clients == largest {
			r.Load.CPUFraction = 0.97
		}
		r.ClientBound = r.Load.Bound()
	}
	d, err := Build(runs, Options{NoPlots: true})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := d.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CLIENT-BOUND: 3 case(s) measured the load generator",
		"### Load generator",
		"| 97% |",
		"CLIENT-BOUND: cpu (97% of 2 cores)",
		fmt.Sprintf("N=%d left out: client-bound", largest),
	} {
		if !bytes.Contains(md.Bytes(), []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A variant whose bytes per operation grow with clients is named at a
// glance with the fitted slope, and a herd-free one is told apart: its
// claim is about notifications.
func TestReportBytesGrowth(t *testing.T) {
	runs := loadRuns(t, "lock-zookeeper.json")
	for i := range runs[0].Results {
		r := &runs[0].Results[i]
		if r.Variant == "fair" {
			r.PerOp["bytes_received"] = 90*float64(r.Clients) + 20
		} else {
			r.PerOp["bytes_received"] = 300
		}
	}
	d, err := Build(runs, Options{NoPlots: true})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := d.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"lock, fair on zookeeper: bytes per acquisition GROW with clients",
		"(≈N^0.9",
		"about 90 bytes more per client",
		"Herd-free is a claim about notifications, not bytes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "lock, naive on zookeeper: bytes per acquisition GROW") {
		t.Error("a flat bytes figure reported as growing")
	}
}

// The capacity section's latency targets give zkbench plan's prediction of
// each open-loop lock run from the sweep and the idle runs among the
// report's runs, with the model's kept error; without a sweep it says why.
func TestCapacityPredictsOpenLoop(t *testing.T) {
	runs := filepath.Join("..", "docs", "runs")
	paths := []string{filepath.Join(runs, "usl-zookeeper", "results.json"), filepath.Join(runs, "plan-zk-fair-u50", "results.json")}
	idle, _ := filepath.Glob(filepath.Join(runs, "idle-zookeeper-r*", "results.json"))
	if len(idle) == 0 {
		t.Fatal("no kept idle runs (make bench-idle)")
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"sweep and idle runs", append(paths, idle...), "(idle, "},
		{"sweep alone", paths, "(sweep, "},
		{"validation run alone", paths[1:], "not predicted: no closed-loop sweep of it among these results"},
	} {
		out := markdownOf(t, tc.paths...)
		var row string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "| plan-zk-fair-u50 |") {
				row = l
			}
		}
		if !strings.Contains(row, tc.want) {
			t.Errorf("%s: the latency targets row of plan-zk-fair-u50 lacks %q: %q", tc.name, tc.want, row)
		}
	}
}

// report --latency puts the chosen histogram in the latency targets table,
// not only in the fits: a lock's open-loop row reads its handoff, the model
// (which predicts the acquire latency) says it answers another histogram,
// and a case that did not record the histogram says so rather than
// reading 0 ms.
func TestLatencyTargetsFollowTheTarget(t *testing.T) {
	runs := filepath.Join("..", "docs", "runs")
	rowOf := func(latency, run string, paths ...string) string {
		t.Helper()
		d, err := Build(readRuns(t, paths...), Options{NoPlots: true, Target: analysis.Target{Latency: figures.Latency(latency)}})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := d.Markdown(&out); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "| "+run+" |") && strings.Contains(l, "| open, ") {
				return l
			}
		}
		t.Fatalf("--latency %s: no latency targets row of %s", latency, run)
		return ""
	}
	u50 := filepath.Join(runs, "plan-zk-fair-u50", "results.json")
	acquire := rowOf("", "plan-zk-fair-u50", u50)
	handoff := rowOf("handoff", "plan-zk-fair-u50", u50)
	if !strings.Contains(acquire, "| acquire |") || !strings.Contains(handoff, "| handoff |") {
		t.Errorf("the rows do not name the histogram asked for:\n%s\n%s", acquire, handoff)
	}
	if acquire == strings.Replace(handoff, "| handoff |", "| acquire |", 1) {
		t.Errorf("--latency handoff changed the row's name but not its figures: %s", handoff)
	}
	if !strings.Contains(handoff, "not predicted: the model predicts acquire, not handoff") {
		t.Errorf("the model's column beside a handoff row: %s", handoff)
	}
	// Beside a run that recorded the histogram, one that did not (the
	// naive lock records no handoff).
	row := rowOf("handoff", "plan-zk-naive-low", u50, filepath.Join(runs, "plan-zk-naive-low", "results.json"))
	if !strings.Contains(row, "not answered: the case recorded no handoff latency") {
		t.Errorf("a case without a handoff histogram under --latency handoff: %s", row)
	}
}

// A crashed-leader failover run beside the kept handover sweep gets the
// failover model's prediction and its kept error; alone, it says why it
// has none.
func TestReportModelsCrashFailovers(t *testing.T) {
	runs := filepath.Join("..", "docs", "runs")
	md := markdownOf(t, filepath.Join(runs, "handover-zookeeper", "results.json"), filepath.Join(runs, "plan-failover-zk-fair-b", "results.json")).String()
	if !strings.Contains(md, "### Leader failover after a crash: the model beside each run") {
		t.Errorf("report lacks the crash failover section")
	}
	// Its row: measured, then the model's p50 / p99, then the kept error.
	row := regexp.MustCompile(`\| zookeeper \| fair \| 100 \| 5s \| 20 \| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \| p50 [-+]`)
	if !row.MatchString(md) {
		t.Errorf("report lacks a modelled row for plan-failover-zk-fair-b")
	}
	alone := markdownOf(t, filepath.Join(runs, "plan-failover-zk-fair-b", "results.json")).String()
	if !strings.Contains(alone, "not predicted: no failover sweep with the leader's session closed among these results") {
		t.Errorf("a crash run alone does not say why it is not predicted")
	}
	if md := markdownOf(t, filepath.Join(runs, "handover-zookeeper", "results.json")).String(); strings.Contains(md, "Leader failover after a crash") {
		t.Errorf("a report with no crash run has the crash section")
	}
}

// TestReportModelsConfigCases: a report of config sweeps and a validation
// run sets each case the plan can read beside its prediction from the
// other cases (the case itself left out), counts the sweeps' ends the
// model cannot reach without them, and gives the model's answer to the
// watchers question beside the measured one, each with the kept error.
func TestReportModelsConfigCases(t *testing.T) {
	runs := filepath.Join("..", "docs", "runs")
	var files []string
	for _, r := range []string{"fanout-zookeeper-1kb-r2", "fanout-zookeeper-16kb-r2", "fanout-zookeeper-1kb-r10", "fanout-zookeeper-16kb-r10", "plan-config-zk-one-shot-a"} {
		files = append(files, filepath.Join(runs, r, "results.json"))
	}
	md := markdownOf(t, files...).String()
	if !strings.Contains(md, "### A config center's propagation: the model beside each case") {
		t.Fatalf("report lacks the config model section")
	}
	for name, re := range map[string]string{
		"the validation run's row": `\| zookeeper \| one-shot \| 4KB \| 5 \| 40 \| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \| [0-9.]+% \| p50 [-+][0-9]+% to [-+][0-9]+%, p99 [-+]`,
		"a sweep's middle case":    `\| zookeeper \| one-shot \| 1KB \| 2 \| 25 \| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \| [0-9.]+% \| p50 [-+]`,
		"the sweeps' ends counted": `\n8 case\(s\) at the ends of their sweeps are not shown`,
		"the model's watchers":     `\| zookeeper \| one-shot \| 1KB \| 2 \| at least 60 \(every usable count met the target\) \| [^|]+ \| (at least )?[0-9]+[^|]* \| p50 [-+]`,
	} {
		if !regexp.MustCompile(re).MatchString(md) {
			t.Errorf("report lacks %s (%s)", name, re)
		}
	}
	alone := markdownOf(t, filepath.Join(runs, "plan-config-zk-one-shot-a", "results.json")).String()
	if !strings.Contains(alone, "not predicted: no other case here the plan reads") {
		t.Errorf("a validation run alone does not say why it is not predicted")
	}
	if md := markdownOf(t, filepath.Join(runs, "handover-zookeeper", "results.json")).String(); strings.Contains(md, "the model beside each case") {
		t.Errorf("a report with no config run has the config model section")
	}
}
