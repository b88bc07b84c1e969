package plots

import (
	"bytes"
	"encoding/json"
	"flag"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

var update = flag.Bool("update", false, "rewrite the golden plot data in testdata/")

// outDir keeps the rendered images for a person to look at.
var outDir = flag.String("out", "", "also write the rendered figures into this folder")

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

// roundFigures rounds every coordinate to 6 significant digits so the golden
// file does not depend on the last bit of a float.
func roundFigures(figs []*Chart) {
	r := func(v float64) float64 {
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return v
		}
		e := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(v))))
		return math.Round(v*e) / e
	}
	for _, f := range figs {
		for _, p := range f.Panels {
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = r(p.X.Min), r(p.X.Max), r(p.Y.Min), r(p.Y.Max)
			for i := range p.Lines {
				for j := range p.Lines[i].Points {
					pt := &p.Lines[i].Points[j]
					pt.X, pt.Y = r(pt.X), r(pt.Y)
				}
			}
		}
	}
}

func TestBuildGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		files  []string
	}{
		{"lock-both.golden.json", []string{"lock-zookeeper.json", "lock-etcd.json"}},
		{"election-failover.golden.json", []string{"election-failover-etcd.json"}},
		{"barrier.golden.json", []string{"barrier-zookeeper.json"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			figs, err := Build(loadRuns(t, tc.files...))
			if err != nil {
				t.Fatal(err)
			}
			roundFigures(figs)
			got, err := json.MarshalIndent(figs, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("plot data differs from %s; inspect and run go test ./plots -update", path)
			}
		})
	}
}

// TestWriteAllRendersEveryFigure writes every figure of every committed
// results file, together, as SVG, and a few as PNG (rasterising is the slow
// part: TestLayout checks every figure's geometry), and checks each image
// decodes at the size its layout gave it.
func TestWriteAllRendersEveryFigure(t *testing.T) {
	t.Parallel()
	runs := loadRuns(t, testresults.Files...)
	dir := *outDir
	if dir == "" {
		dir = t.TempDir()
	}
	formats := []string{"svg"}
	if *outDir != "" {
		formats = Formats // a person looks at all of them
	}
	paths, err := WriteAll(runs, dir, formats)
	if err != nil {
		t.Fatal(err)
	}
	figs, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(formats)*len(figs) {
		t.Fatalf("wrote %d files for %d figures in %d formats", len(paths), len(figs), len(formats))
	}
	for _, name := range []string{
		"lock-herd", "lock-fanout", "lock-throughput", "lock-requests", "lock-latency-acquire", "lock-distribution-acquire",
		"lock-latency-handoff", "lock-timeline",
		"election-failover-herd", "election-failover-fanout", "election-failover-latency-failover", "election-failover-distribution-handoff",
		"barrier-herd", "barrier-fanout", "barrier-latency-enter", "barrier-distribution-leave", "barrier-requests",
	} {
		if Find(figs, name) == nil {
			t.Errorf("no figure %s", name)
		}
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(p) {
		case ".png":
		case ".svg":
			if !bytes.Contains(raw, []byte("<svg")) || !bytes.Contains(raw, []byte("</svg>")) {
				t.Errorf("%s is not an SVG document", p)
			}
		default:
			t.Errorf("unexpected file %s", p)
		}
	}
	for _, name := range []string{"lock-herd", "lock-requests", "lock-timeline"} {
		f := Find(figs, name)
		var buf bytes.Buffer
		if err := Render(&buf, f, "png"); err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(&buf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// 96 dpi: 4/3 pixels a point.
		lay := layoutOf(f)
		w, h := int(math.Ceil(float64(lay.width)*4/3)), int(math.Ceil(float64(lay.height)*4/3))
		if absInt(cfg.Width-w) > 1 || absInt(cfg.Height-h) > 1 {
			t.Errorf("%s.png is %dx%d pixels, its layout %dx%d", name, cfg.Width, cfg.Height, w, h)
		}
		if cfg.Width < int(panelW*4/3) || cfg.Height < int(panelH*4/3) {
			t.Errorf("%s.png is %dx%d pixels: smaller than a panel", name, cfg.Width, cfg.Height)
		}
	}
	// The lock figures name both backends in their panels and legend, and
	// where the data came from.
	svg, err := os.ReadFile(filepath.Join(dir, "lock-fanout.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"naive (zookeeper)", "fair (etcd)", "watch events per acquisition", "SYNTHETIC",
		"run synthetic-lock-zookeeper", "run synthetic-lock-etcd"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("lock-fanout.svg does not show %q", want)
		}
	}
}

func absInt(x int) int { return max(x, -x) }

// TestFanoutShowsTheHerd checks the fan-out figure carries what a reader
// must see: the naive lock's notifications grow with clients, the herd-free
// lock's stay flat.
func TestFanoutShowsTheHerd(t *testing.T) {
	figs, err := Build(loadRuns(t, "lock-zookeeper.json", "lock-etcd.json"))
	if err != nil {
		t.Fatal(err)
	}
	fan := Find(figs, "lock-fanout")
	if fan == nil {
		t.Fatal("no lock-fanout figure")
	}
	if fan.Rows != 2 || fan.Cols != 2 {
		t.Fatalf("lock-fanout is %dx%d, want client and server rows by two backends", fan.Rows, fan.Cols)
	}
	for _, p := range fan.Panels {
		for _, l := range p.Lines {
			first, last := l.Points[0], l.Points[len(l.Points)-1]
			growth := last.Y / first.Y
			switch l.Variant {
			case "naive":
				if growth < 10 {
					t.Errorf("%s %s: naive fan-out grows only %.2fx from N=%v to N=%v", p.Title, l.Label, growth, first.X, last.X)
				}
			case "fair":
				if growth > 1.5 {
					t.Errorf("%s %s: herd-free fan-out grows %.2fx", p.Title, l.Label, growth)
				}
			}
		}
	}
}

// TestRunsSetApartDrawApart: two runs of one sweep set to hold for
// different times are two lines a variant, named by the hold and drawn in
// colours of their own, not one line of their means.
func TestRunsSetApartDrawApart(t *testing.T) {
	runs := loadRuns(t, "lock-zookeeper.json", "lock-zookeeper.json")
	runs[1].ID, runs[1].Config.Hold = runs[1].ID+"-held", 50*time.Millisecond
	figs, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	fig := Find(figs, "lock-throughput")
	if fig == nil {
		t.Fatal("no lock-throughput figure")
	}
	colors := map[string]string{}
	for _, p := range fig.Panels {
		for _, l := range p.Lines {
			colors[l.Variant] = l.Color
			if !strings.Contains(l.Label, "(hold ") {
				t.Errorf("line %q does not say its hold", l.Label)
			}
		}
	}
	a, b := colors["fair (hold 1ms)"], colors["fair (hold 50ms)"]
	if a == "" || b == "" || a == b {
		t.Errorf("fair's two holds drawn as %q and %q (lines: %v)", a, b, colors)
	}
}

func TestWriteAllRejectsUnknownFormat(t *testing.T) {
	if _, err := WriteAll(loadRuns(t, "barrier-zookeeper.json"), t.TempDir(), []string{"gif"}); err == nil {
		t.Fatal("WriteAll accepted format gif")
	}
	if _, err := WriteAll(nil, t.TempDir(), Formats); err != ErrNoCharts {
		t.Fatalf("WriteAll(no runs) = %v, want ErrNoCharts", err)
	}
}

// TestMeasuredLockSweep renders every figure of a real lock sweep on
// ZooKeeper and etcd and checks the fan-out figure shows the herd: from the
// middle to the largest client count, the naive lock's server-side
// notifications per acquisition grow about as fast as the clients, the
// herd-free and native locks' stay flat.
func TestMeasuredLockSweep(t *testing.T) {
	t.Parallel()
	runs := loadRuns(t, testresults.Measured...)
	// SVG only: TestWriteAllRendersEveryFigure covers PNG, and the report's
	// test renders this sweep's PNGs.
	paths, err := WriteAll(runs, t.TempDir(), []string{"svg"})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 7 {
		t.Fatalf("only %d files", len(paths))
	}
	figs, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	fan := Find(figs, "lock-fanout")
	if fan == nil || fan.Cols != 2 {
		t.Fatalf("fan-out figure %+v", fan)
	}
	seen := 0
	for _, p := range fan.Panels {
		if !strings.Contains(p.Title, "server side") {
			continue
		}
		for _, l := range p.Lines {
			mid, last := l.Points[len(l.Points)/2], l.Points[len(l.Points)-1]
			growth, clients := last.Y/mid.Y, last.X/mid.X
			switch l.Variant {
			case "naive":
				if growth < clients/2 {
					t.Errorf("%s: naive fan-out grows %.2fx while clients grow %.0fx", l.Label, growth, clients)
				}
			default:
				if growth > 1.25 {
					t.Errorf("%s: %s fan-out grows %.2fx", l.Label, l.Variant, growth)
				}
			}
			seen++
		}
	}
	if seen != 6 {
		t.Errorf("checked %d server-side lines, want 3 variants x 2 backends", seen)
	}
}

// TestFaultTimelineGolden: the over-time figure of a real fault run (3-node
// local ZooKeeper, 6 clients on the fair lock; the leader killed and
// restarted, every connection reset, one session expired; only the raw
// server metric names were dropped from the file) marks the faults and
// counts the session changes per interval.
func TestFaultTimelineGolden(t *testing.T) {
	run, err := results.ReadFile(filepath.Join("testdata", "fault-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	figs, err := Build([]*results.Run{run})
	if err != nil {
		t.Fatal(err)
	}
	fig := Find(figs, "lock-timeline")
	if fig == nil || fig.Rows != 2 || len(fig.Panels) != 2 {
		t.Fatalf("timeline %+v: want a throughput row and a session row", fig)
	}
	tp, sp := fig.Panels[0], fig.Panels[1]
	res := run.Results[0]
	end := res.Elapsed.Seconds()
	var band, instants []Mark
	for _, m := range tp.Marks {
		if m.To > m.From {
			band = append(band, m)
		} else {
			instants = append(instants, m)
		}
	}
	if len(band) != 1 || !strings.HasPrefix(band[0].Label, "kill-leader: server ") || band[0].From < 1 || band[0].To > end || band[0].To-band[0].From < 1.5 {
		t.Errorf("kill-leader band %+v: want about 2s (kill-leader@2s+2s, the restart waits until it serves) in the case's %.1fs", band, end)
	}
	if len(instants) != 2 || !strings.HasPrefix(instants[0].Label, "reset-conns: ") || instants[1].Label != "expire-session:1" {
		t.Errorf("instant marks %+v", instants)
	}
	if len(sp.Marks) != len(tp.Marks) {
		t.Errorf("session panel marks %+v", sp.Marks)
	}
	counts := map[string]float64{}
	for _, l := range sp.Lines {
		for _, pt := range l.Points {
			counts[strings.TrimPrefix(l.Label, "session ")] += pt.Y
		}
	}
	for _, state := range []string{"disconnected", "reconnected", "expired", "lost"} {
		if got, want := counts[state], float64(res.Faults["session."+state]); got != want {
			t.Errorf("%s: %v in the plot, %v counted in the result", state, got, want)
		}
	}
	if tp.X.Min != sp.X.Min || tp.X.Max != sp.X.Max {
		t.Errorf("the rows do not share time: %v..%v and %v..%v", tp.X.Min, tp.X.Max, sp.X.Min, sp.X.Max)
	}

	roundFigures([]*Chart{fig})
	for _, p := range fig.Panels {
		for i := range p.Marks {
			m := &p.Marks[i]
			m.From, m.To = math.Round(m.From*1e6)/1e6, math.Round(m.To*1e6)/1e6
		}
	}
	got, err := json.MarshalIndent(fig, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "fault-timeline.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("plot data differs from %s; inspect and run go test ./plots -update", path)
	}
	var buf bytes.Buffer
	if err := Render(&buf, fig, "png"); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatal(err)
	}
}

// A client-bound case's points carry a cross in every sweep figure, at the
// case's own value, and the figure still renders.
func TestClientBoundPointsMarked(t *testing.T) {
	runs := loadRuns(t, "lock-zookeeper.json")
	largest := 0
	for _, r := range runs[0].Results {
		largest = max(largest, r.Clients)
	}
	for i := range runs[0].Results {
		if r := &runs[0].Results[i]; r.Clients == largest && r.Variant == "naive" {
			r.ClientBound = &results.ClientBound{Reasons: []results.BoundReason{results.BoundCPU}, Detail: "cpu (97% of 2 cores)"}
		}
	}
	figs, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lock-fanout", "lock-throughput"} {
		f := Find(figs, name)
		if f == nil {
			t.Fatalf("no %s figure", name)
		}
		marked := 0
		for _, p := range f.Panels {
			var naiveLast Point
			for _, l := range p.Lines {
				if l.Variant == "naive" && len(l.Points) > 0 {
					naiveLast = l.Points[len(l.Points)-1]
				}
			}
			for _, l := range p.Lines {
				if l.Label != ClientBoundLabel {
					continue
				}
				marked++
				if len(l.Points) != 1 || l.Points[0] != naiveLast || !l.Scatter {
					t.Errorf("%s %s: client-bound marks %+v, want the naive line's point at N=%d %+v", name, p.Title, l.Points, largest, naiveLast)
				}
			}
		}
		if marked == 0 {
			t.Errorf("%s: no client-bound mark", name)
		}
	}
	// Where a variant's lines share one legend entry (client and server
	// side, p50 to p99.9), the marks keep theirs: one entry, its own label,
	// no " (zookeeper)" entry of no variant.
	for _, name := range []string{"lock-herd", "lock-fanout", "lock-requests", "lock-latency-acquire"} {
		f := Find(figs, name)
		if f == nil {
			t.Fatalf("no %s figure", name)
		}
		n := 0
		for _, e := range legendOf(f) {
			if e.label == ClientBoundLabel {
				n++
			}
			if strings.HasPrefix(e.label, " ") || strings.HasPrefix(e.label, "(") {
				t.Errorf("%s: legend entry %q names no variant", name, e.label)
			}
		}
		if n != 1 {
			t.Errorf("%s: %d client-bound legend entries, want 1", name, n)
		}
		checkLayout(t, f)
	}
}

// The bytes figure appears only where bytes were measured, client side and
// server side, one line per variant.
func TestBytesFigure(t *testing.T) {
	runs := loadRuns(t, "lock-zookeeper.json")
	figs, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	if Find(figs, "lock-bytes") != nil {
		t.Fatal("a bytes figure for results that measured no bytes")
	}
	for i := range runs[0].Results {
		r := &runs[0].Results[i]
		r.PerOp["bytes_received"] = 90 * float64(r.Clients)
		r.PerOp["server_bytes_sent"] = 100 * float64(r.Clients)
	}
	if figs, err = Build(runs); err != nil {
		t.Fatal(err)
	}
	f := Find(figs, "lock-bytes")
	if f == nil || f.Rows != 2 || len(f.Panels) != 2 {
		t.Fatalf("lock-bytes %+v, want a client and a server row", f)
	}
	for _, p := range f.Panels {
		for _, l := range p.Lines {
			last := l.Points[len(l.Points)-1]
			if last.Y < 90*last.X || last.Y > 100*last.X {
				t.Errorf("%s %s: point %+v is not the bytes given", p.Title, l.Label, last)
			}
		}
	}
}

// The load generator figure appears only where the load generator was
// measured, a row for its memory a client, its CPU and the sessions lost,
// with the values of the results.
func TestLoadgenFigure(t *testing.T) {
	runs := loadRuns(t, "lock-zookeeper.json")
	figs, err := Build(runs)
	if err != nil {
		t.Fatal(err)
	}
	if Find(figs, "lock-loadgen") != nil {
		t.Fatal("a load generator figure for results that did not measure it")
	}
	for i := range runs[0].Results {
		r := &runs[0].Results[i]
		r.Load = &results.Load{Cores: 2, CPUFraction: 0.25}
		r.Cost.ClientCostPerClient = 1000 * float64(r.Clients)
		r.SessionsLost = int64(r.Clients / 10)
	}
	if figs, err = Build(runs); err != nil {
		t.Fatal(err)
	}
	f := Find(figs, "lock-loadgen")
	if f == nil || f.Rows != 3 || len(f.Panels) != 3 {
		t.Fatalf("lock-loadgen %+v, want rows for memory, CPU and sessions lost", f)
	}
	for i, want := range []func(x float64) float64{
		func(x float64) float64 { return x },                    // KB a client
		func(float64) float64 { return 25 },                     // % of the cores
		func(x float64) float64 { return float64(int(x) / 10) }, // sessions lost
	} {
		p := f.Panels[i]
		if len(p.Lines) == 0 {
			t.Fatalf("%s: no lines", p.Title)
		}
		for _, l := range p.Lines {
			for _, pt := range l.Points {
				if w := want(pt.X); math.Abs(pt.Y-w) > 0.5 {
					t.Errorf("%s %s: point %+v, want y %v", p.Title, l.Label, pt, w)
				}
			}
		}
	}
	checkLayout(t, f)
}
