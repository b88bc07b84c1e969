package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// summaryTestRun is a lock run of two cases: a naive one measured on
// both sides, and a native one whose clients were not instrumented.
func summaryTestRun(t testing.TB) *results.Run {
	t.Helper()
	rec := results.NewRecorder()
	for i := 1; i <= 1000; i++ {
		results.Record(rec, time.Duration(i)*time.Microsecond*10)
	}
	h, err := results.NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	return &results.Run{
		Format:    results.FormatVersion,
		ID:        "write-test",
		Status:    results.StatusComplete,
		StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Config:    results.Config{Workload: "lock", Backend: "etcd", Variants: []string{"naive", "fair"}, Clients: []int{10}, Repeat: 1},
		Results: []results.Result{
			{
				Workload: "lock", Variant: "naive", Backend: "etcd", Clients: 10, StoppedBy: "duration",
				Elapsed:    2 * time.Second,
				Ops:        results.Ops{Issued: 1010, Succeeded: 1000, Failed: 1, StillWaiting: 9},
				Throughput: 500,
				Latency:    map[figures.Latency]*results.Histogram{"acquire": h},
				PerOp: map[string]float64{"watch_events": 9.02, "server_watch_events": 9.01, "wasted_wakeups": 8.1,
					"bytes_received": 1234, "server_bytes_sent": 2600},
				Fairness: results.Fairness{FIFOInversions: 12, Jain: 0.97},
				Safety:   results.Safety{Checked: 1000},
				Errors:   map[string]int64{"session_lost": 1},
				Series:   results.Series{Interval: 100 * time.Millisecond, Counts: []int64{50, 50}},
				Notes:    []string{"client and server disagree"},
				Load:     &results.Load{Cores: 2, CPUFraction: 0.97},
				ClientBound: &results.ClientBound{Reasons: []results.BoundReason{results.BoundCPU},
					Detail: "cpu (97% of 2 cores)"},
			},
			{
				Workload: "lock", Variant: "native", Backend: "etcd", Clients: 10, StoppedBy: "ops",
				Elapsed: time.Second, Ops: results.Ops{Issued: 5, Succeeded: 5}, Throughput: 5,
				PerOp:  map[string]float64{"server_watch_events": 1},
				Safety: results.Safety{Checked: 5},
			},
		},
		Leftovers: []string{"/zkbench/write-test/c1/lock/x"},
	}
}

func TestSummary(t *testing.T) {
	var b strings.Builder
	if err := WriteSummary(&b, summaryTestRun(t), SummaryOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	var naive, native string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 2 && f[1] == "naive" {
			naive = l
		}
		if len(f) > 2 && f[1] == "native" {
			native = l
		}
	}
	if naive == "" || native == "" {
		t.Fatalf("summary lacks a row:\n%s", out)
	}
	for _, want := range []string{"9.02 | 9.01", "8.10", "0.970", " 12 ", "500.0", "1234 | 2600"} {
		if !strings.Contains(naive, want) {
			t.Errorf("naive row lacks %q: %q", want, naive)
		}
	}
	// Errors leave out operations still waiting at the bound: 1 error, 9
	// waiting at the end, apart.
	if f := strings.Fields(naive); f[len(f)-6] != "1" || f[len(f)-5] != "9" {
		t.Errorf("naive errors, waiting at end = %q, %q, want 1, 9: %q", f[len(f)-6], f[len(f)-5], naive)
	}
	// The naive case's load generator ran at 97% of its cores: client-bound.
	if f := strings.Fields(naive); f[len(f)-4] != "97%" || f[len(f)-3] != "cpu" || f[len(f)-2] != "0" {
		t.Errorf("naive client cpu, bound, sessions lost = %q, want 97%%, cpu, 0: %q", f[len(f)-4:len(f)-1], naive)
	}
	// The native row measured neither client-side counts, nor latency, nor
	// fairness, nor the load generator: dashes, never zeros.
	f := strings.Fields(native)
	// backend variant clients ops ops/s p50 p99 p99.9 cli | srv wasted cli | srv bytes cli | srv fifo jain viol errors waiting cpu bound lost stopped
	want := []string{"etcd", "native", "10", "5", "5.00", "-", "-", "-", "-", "|", "1.00", "-", "-", "|", "-", "-", "|", "-", "-", "-", "0", "0", "0", "-", "-", "-", "ops"}
	if strings.Join(f, " ") != strings.Join(want, " ") {
		t.Errorf("native row = %q\nwant         %q", strings.Join(f, " "), strings.Join(want, " "))
	}
	for _, want := range []string{"acquire p50", "client and server disagree", "/zkbench/write-test/c1/lock/x"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	// The narrow table: the columns a reader compares first, and flags
	// for what the wide one has columns for.
	b.Reset()
	if err := WriteSummary(&b, summaryTestRun(t), SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 1 && (f[0] == "variant" || f[0] == "naive" || f[0] == "native") {
			rows[f[0]] = strings.Join(f, " ")
		}
	}
	for row, want := range map[string]string{
		"variant": "variant clients ops/s acquire p50 p99 notif/op cli|srv req/op cli|srv sessions lost flags",
		"naive":   "naive 10 500.0 5.00ms 9.90ms 9.02 | 9.01 - | - 0 client-bound,errors",
		"native":  "native 10 5.00 - - - | 1.00 - | - -",
	} {
		if rows[row] != want {
			t.Errorf("narrow %s row = %q, want %q\n%s", row, rows[row], want, b.String())
		}
	}
}

// TestSummarySafety: a run with faults or a fenced register gets a safety
// table; exclusion violations and the register's stale writes are apart.
func TestSummarySafety(t *testing.T) {
	var plain strings.Builder
	if err := WriteSummary(&plain, summaryTestRun(t), SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "safety:") {
		t.Fatalf("a run without faults or fence got a safety table:\n%s", plain.String())
	}
	run := summaryTestRun(t)
	run.Results[0].Safety = results.Safety{Checked: 1000, Violations: 3, Prevented: 2,
		Fence: &results.Fence{Fenced: true, Writes: 2000, Stale: 3, Rejected: 2}}
	run.Results[0].Faults = map[string]int64{"kill-leader": 1, "undone": 1, "session.expired": 2, "session.disconnected": 7}
	var b strings.Builder
	if err := WriteSummary(&b, run, SummaryOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	_, table, ok := strings.Cut(out, "\nsafety:\n")
	if !ok {
		t.Fatalf("no safety table:\n%s", out)
	}
	var naive, native string
	for _, l := range strings.Split(table, "\n") {
		switch f := strings.Fields(l); {
		case len(f) > 2 && f[1] == "naive":
			naive = l
		case len(f) > 2 && f[1] == "native":
			native = l
		}
	}
	// 3 violations: 1 stale write accepted (3 stale, 2 rejected), so 2 of exclusion.
	for _, want := range []string{"3 (exclusion 2)", " on ", " 2000 ", "kill-leader 1, undone 1", "disconnected 7, expired 2"} {
		if !strings.Contains(naive, want) {
			t.Errorf("naive safety row lacks %q: %q", want, naive)
		}
	}
	if f := strings.Fields(naive); strings.Join(f[7:11], " ") != "on 2000 3 1" {
		t.Errorf("fence columns %q, want mode on, 2000 writes, 3 stale, 1 accepted", f[7:11])
	}
	want := "etcd native 10 5 0 - - - - - - -"
	if got := strings.Join(strings.Fields(native), " "); got != want {
		t.Errorf("native safety row = %q, want %q", got, want)
	}

	// The narrow table leaves out the backend of a run of one and gives
	// the faults and session changes a line a case under it.
	b.Reset()
	if err := WriteSummary(&b, run, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	_, table, _ = strings.Cut(b.String(), "\nsafety:\n")
	table, _, _ = strings.Cut(table, "\n\n")
	for _, want := range []string{
		"variant clients checked violations fence writes stale accepted rejected",
		"naive 10 1000 3 (exclusion 2) on 2000 3 1 2",
		"native 10 5 0 - - - - -",
		"naive/10: faults: kill-leader 1, undone 1; sessions: disconnected 7, expired 2",
	} {
		if !strings.Contains(strings.Join(strings.Fields(table), " "), want) {
			t.Errorf("narrow safety table lacks %q:\n%s", want, table)
		}
	}
}
