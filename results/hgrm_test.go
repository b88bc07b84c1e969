package results

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/figures"
)

// TestWriteHgrm checks the export against the histogram it came from: the
// percentile text's rows are HdrHistogram's (value in ms, percentile,
// count, 1/(1-p)), the last row counts every value, and its footer carries
// the same max and total count.
func TestWriteHgrm(t *testing.T) {
	rec := NewRecorder()
	for i := 1; i <= 1000; i++ {
		Record(rec, time.Duration(i)*time.Millisecond)
	}
	hs, err := NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHgrm(&b, hs); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if header := strings.SplitN(strings.TrimSpace(text), "\n", 2)[0]; strings.Join(strings.Fields(header), " ") != "Value Percentile TotalCount 1/(1-Percentile)" {
		t.Fatalf("no .hgrm header:\n%s", text)
	}
	var last []string
	sc := bufio.NewScanner(strings.NewReader(text))
	rows := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 {
			if _, err := strconv.ParseFloat(f[0], 64); err == nil {
				last = f
				rows++
			}
		}
	}
	if rows < 10 || last == nil {
		t.Fatalf("%d rows:\n%s", rows, text)
	}
	if last[2] != "1000" {
		t.Errorf("last row %v: want a total count of 1000", last)
	}
	if v, _ := strconv.ParseFloat(last[0], 64); v < 999 || v > 1001 {
		t.Errorf("last row %v: want the max, about 1000 ms", last)
	}
	if !strings.Contains(text, "#[Max     =     1000.") || !strings.Contains(text, "Total count    =         1000") {
		t.Errorf("footer does not match:\n%s", text[strings.LastIndex(text, "#[Mean"):])
	}
}

func TestWriteHgrmFiles(t *testing.T) {
	rec := NewRecorder()
	Record(rec, time.Millisecond)
	hs, err := NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := NewHistogram(NewRecorder())
	run := &Run{ID: "r1", Results: []Result{{Workload: "lock", Variant: "fair", Backend: "etcd", Clients: 10, Repeat: 1,
		Latency: map[figures.Latency]*Histogram{"acquire": hs, "handoff": hs, "none": empty}}}}
	dir := t.TempDir()
	paths, err := WriteHgrmFiles([]*Run{run}, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "etcd-lock-fair-10-1.acquire.hgrm"), filepath.Join(dir, "etcd-lock-fair-10-1.handoff.hgrm")}
	if len(paths) != 2 || paths[0] != want[0] || paths[1] != want[1] {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	if raw, err := os.ReadFile(paths[0]); err != nil || !strings.Contains(string(raw), "Percentile") {
		t.Errorf("%s: %v %q", paths[0], err, raw)
	}
	if _, err := WriteHgrmFiles([]*Run{{ID: "x"}}, t.TempDir()); err != ErrNoHistograms {
		t.Errorf("no histograms: %v", err)
	}
}
