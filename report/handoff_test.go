package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

// The report's handoff table: a row for the case whose handoffs were split,
// with the calibrated notify of its backend and the ratio; none for the
// case without.
func TestReportHandoffPath(t *testing.T) {
	h := func(p50 time.Duration) *results.Histogram { return testresults.Constant(t, 100, p50) }
	run := &results.Run{Format: results.FormatVersion, ID: "hp", Status: results.StatusComplete,
		Calibration: &results.Calibration{Backend: backends.Etcd, NotifyLatency: 500 * time.Microsecond},
		Results: []results.Result{
			{Workload: "lock", Backend: backends.Etcd, Variant: "naive", Clients: 20, Ops: results.Ops{Issued: 100, Succeeded: 100},
				Elapsed: time.Second, Throughput: 100, StoppedBy: "duration",
				Latency: map[figures.Latency]*results.Histogram{figures.LatencyHandoff: h(3 * time.Millisecond)}},
			{Workload: "lock", Backend: backends.Etcd, Variant: "fair", Clients: 20, Ops: results.Ops{Issued: 100, Succeeded: 100},
				Elapsed: time.Second, Throughput: 100, StoppedBy: "duration",
				Latency: map[figures.Latency]*results.Histogram{
					figures.LatencyHandoff:       h(1500 * time.Microsecond),
					figures.LatencyReleaseCall:   h(800 * time.Microsecond),
					figures.LatencyHandoffNotify: h(900 * time.Microsecond),
					figures.LatencyHandoffDecide: h(600 * time.Microsecond),
				}},
		}}
	markdown := func() string {
		t.Helper()
		d, err := Build([]*results.Run{run}, Options{NoPlots: true})
		if err != nil {
			t.Fatal(err)
		}
		var md bytes.Buffer
		if err := d.Markdown(&md); err != nil {
			t.Fatal(err)
		}
		return md.String()
	}
	out := markdown()
	i := strings.Index(out, "Where a handoff's time goes")
	if i < 0 {
		t.Fatalf("no handoff section in\n%s", out)
	}
	section := out[i:]
	if j := strings.Index(section[1:], "\n## "); j >= 0 {
		section = section[:j+1]
	}
	t.Log(section)
	if !strings.Contains(section, "| lock | etcd | fair | 20 | 100 | 1.5") || !strings.Contains(section, "| 0.5 | 3x |") {
		t.Errorf("the fair case's row is not there, or lacks its calibration and ratio")
	}
	if strings.Contains(section, "| naive |") {
		t.Errorf("the naive case, whose handoffs were not split, has a row")
	}
	if strings.Contains(section, "after the hold") {
		t.Errorf("a calibration without the paced notify got its columns")
	}

	// With the notify measured after the hold, two columns more.
	run.Calibration.NotifyPace, run.Calibration.PacedNotifyLatency = 50*time.Millisecond, time.Millisecond
	out = markdown()
	if !strings.Contains(out, "| 0.5 | 3x | 1 (50ms idle) | 1.5x |") {
		t.Errorf("the paced calibration and ratio are not in the fair case's row:\n%s", out[strings.Index(out, "Where a handoff's time goes"):])
	}
	if strings.Contains(out, "behind another write") || strings.Contains(out, "CPU floor") {
		t.Errorf("columns for a contended calibration and a CPU floor the run did not measure:\n%s", out[strings.Index(out, "Where a handoff's time goes"):])
	}

	// Behind another write, and on a local cluster whose servers' cost was
	// measured: the servers took 1.2 s of CPU over 100 acquisitions a
	// second in 1 s (12 ms an acquisition), the load generator 0.4 s and
	// others 0.2 s of the 2 cores, which left them 1.4: a 8.57 ms floor.
	run.Calibration.ContendedNotifyLatency = 750 * time.Microsecond
	run.ClusterMode = "local"
	fair := &run.Results[1]
	fair.Cost = results.Cost{ServerCPUSeconds: 1.2, ServerCostMeasured: true, ClientCPUSeconds: 0.4}
	fair.Load = &results.Load{Machine: &results.Machine{Cores: 2, Elapsed: time.Second, Others: 0.2}}
	if out := markdown(); !strings.Contains(out, "| 1.5x | 0.75 | 2x | 10 | 8.571 |") {
		t.Errorf("the contended calibration, its ratio, 1/throughput and the CPU floor are not in the fair case's row:\n%s", out[strings.Index(out, "Where a handoff's time goes"):])
	}
}
