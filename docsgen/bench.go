package docsgen

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/report"
)

// benchLine is one benchmark's result in `make bench`'s kept output
// (docs/runs/bench.txt): its package, its name without the GOMAXPROCS
// suffix, and its metrics by unit ("ns/op", "rss-bytes/session", ...).
type benchLine struct {
	pkg, name string
	metrics   map[string]float64
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// readBench reads the benchmark lines of runs/bench.txt.
func readBench(runs string) ([]benchLine, error) {
	path := filepath.Join(runs, "bench.txt")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w (make bench writes it: see docs/results.md)", err)
	}
	defer f.Close()
	var out []benchLine
	pkg := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 4 || len(fs)%2 != 0 {
			return nil, fmt.Errorf("bench: %s: cannot read %q", path, line)
		}
		b := benchLine{pkg: pkg, name: procsSuffix.ReplaceAllString(fs[0], ""), metrics: map[string]float64{}}
		for i := 2; i+1 < len(fs); i += 2 {
			v, err := strconv.ParseFloat(fs[i], 64)
			if err != nil {
				return nil, fmt.Errorf("bench: %s: %q: %w", path, line, err)
			}
			b.metrics[fs[i+1]] = v
		}
		out = append(out, b)
	}
	return out, sc.Err()
}

// benchFind is the metric unit of the benchmark name in package pkg
// (its last path element).
func benchFind(lines []benchLine, pkg, name, unit string) (float64, error) {
	for _, l := range lines {
		if (l.pkg == pkg || strings.HasSuffix(l.pkg, "/"+pkg)) && l.name == name {
			v, ok := l.metrics[unit]
			if !ok {
				return 0, fmt.Errorf("bench: %s %s has no %s", pkg, name, unit)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("bench: bench.txt has no %s in %s (make bench)", name, pkg)
}

// benchSessions is what an idle session costs (BenchmarkIdleSessions).
func benchSessions(runs string) (string, error) {
	lines, err := readBench(runs)
	if err != nil {
		return "", err
	}
	rows := []struct{ backend, pkg, sub, label string }{
		{"ZooKeeper", "zookeeper", "default", "default (96 KiB receive, 8 KiB send buffer)"},
		{"ZooKeeper", "zookeeper", "maxchildren=10000", "receive buffer sized for 10,000 children of 52-byte names"},
		{"ZooKeeper", "zookeeper", "maxchildren=10000,name=10", "receive buffer sized for 10,000 of Enqueue's 10-digit names (the fair lock's)"},
		{"etcd", "etcd", "default", "default (own client and lease per session)"},
		{"etcd", "etcd", "small-windows", "smaller gRPC windows"},
		{"etcd", "etcd", "small-buffers", "smaller gRPC buffers"},
		{"etcd", "etcd", "shared-10-conns", "10 shared connections (`--conns 10`)"},
	}
	var b strings.Builder
	b.WriteString("| backend | configuration | client RSS per session | goroutines per session | server RSS per session |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: |\n")
	for _, r := range rows {
		name := "BenchmarkIdleSessions/" + r.sub
		rss, err := benchFind(lines, r.pkg, name, "rss-bytes/session")
		if err != nil {
			return "", err
		}
		gor, err := benchFind(lines, r.pkg, name, "goroutines/session")
		if err != nil {
			return "", err
		}
		server := "not measured (JVM heap)"
		if v, err := benchFind(lines, r.pkg, name, "server-rss-bytes/session"); err == nil {
			server = kb(v)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.backend, r.label, kb(rss), strconv.FormatFloat(gor, 'f', -1, 64), server)
	}
	return b.String(), nil
}

func kb(bytes float64) string { return fmt.Sprintf("%.0f KB", bytes/1000) }

// benchLocks is the same herd-free lock as a bare loop, through zkbench's
// seam and as the client library's own (BenchmarkLockZooKeeper,
// BenchmarkLockEtcd), and the fair shared lock beside etcd's RWMutex
// (BenchmarkRWLockEtcd), side by side in one run.
func benchLocks(runs string) (string, error) {
	lines, err := readBench(runs)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| backend | lock | clients | bare acq/s | fair acq/s | native acq/s | fair / bare | fair / native |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, be := range []struct {
		label, lock, bench string
		clients            []int
	}{
		{"ZooKeeper", "lock", "BenchmarkLockZooKeeper", []int{100, 1000}},
		{"etcd", "lock", "BenchmarkLockEtcd", []int{100, 1000}},
		{"etcd", "shared lock, 9 reads in 10", "BenchmarkRWLockEtcd", []int{50, 200}},
	} {
		for _, n := range be.clients {
			get := func(v string) (float64, bool) {
				x, err := benchFind(lines, "fair", fmt.Sprintf("%s/clients=%d/%s", be.bench, n, v), "acq/s")
				return x, err == nil
			}
			fair, ok := get("fair")
			native, ok2 := get("native")
			if !ok || !ok2 {
				return "", fmt.Errorf("bench: bench.txt lacks %s at %d clients (fair and native): make bench", be.bench, n)
			}
			bare, hasBare := get("bare")
			bareCell, ratio := "", ""
			if hasBare {
				bareCell, ratio = thousands(fmt.Sprintf("%.0f", bare)), fmt.Sprintf("%.2f", fair/bare)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %.2f |\n", be.label, be.lock, thousands(strconv.Itoa(n)), bareCell,
				thousands(fmt.Sprintf("%.0f", fair)), thousands(fmt.Sprintf("%.0f", native)), ratio, fair/native)
		}
	}
	return b.String(), nil
}

// benchInstrument is what the counting decorator costs a call
// (backends/instrument's benchmarks).
func benchInstrument(runs string) (string, error) {
	lines, err := readBench(runs)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| benchmark | ns/op | B/op | allocs/op |\n")
	b.WriteString("| --- | ---: | ---: | ---: |\n")
	n := 0
	for _, l := range lines {
		if !strings.HasSuffix(l.pkg, "/instrument") {
			continue
		}
		n++
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", strings.TrimPrefix(l.name, "Benchmark"), report.Num(l.metrics["ns/op"]),
			report.Num(l.metrics["B/op"]), report.Num(l.metrics["allocs/op"]))
	}
	if n == 0 {
		return "", fmt.Errorf("bench: bench.txt has no backends/instrument benchmark (make bench)")
	}
	return b.String(), nil
}
