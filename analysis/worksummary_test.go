package analysis

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
)

// TestWriteWork: the ledger table shows each checked case's crashes by
// how they ended, its anomalies, the range of its recoveries and the cost
// per committed operation; a case that checked no work is left out.
func TestWriteWork(t *testing.T) {
	run := &results.Run{Results: []results.Result{
		{Workload: "ledger", Variant: "naive", Backend: "etcd", Clients: 4, Work: &results.Work{
			Steps: 3, Committed: 10, Requests: 80, Bytes: 3600,
			Anomalies: results.WorkAnomalies{PartialVisible: 2, Mismatched: 2},
			Crashes: []results.Crash{
				{Client: 0, Ended: results.CrashPartial, Recovery: 1900 * time.Millisecond},
				{Client: 1, Ended: results.CrashPartial, Recovery: 2400 * time.Millisecond},
			}}},
		{Workload: "ledger", Variant: "idempotent", Backend: "etcd", Clients: 4, Work: &results.Work{
			Steps: 3, Committed: 10, Recovered: 1, Requests: 109, Bytes: 5700,
			Crashes: []results.Crash{{Client: 2, Ended: results.CrashCompleted, Recovery: 2 * time.Second}}}},
		{Workload: "lock", Variant: "fair", Backend: "etcd", Clients: 4},
	}}
	if !needsWorkTable(run) {
		t.Fatal("a run with work checked needs the table")
	}
	var b bytes.Buffer
	if err := WriteWork(&b, run); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{"2: 2 partial", "1.90-2.40", "8.0", "360.0", "1: 1 completed", "2.00", "10.9", "570.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if strings.Contains(out, "fair") {
		t.Errorf("the lock case, which checked no work, is in the table")
	}
	if needsWorkTable(&results.Run{Results: run.Results[2:]}) {
		t.Error("a run without work checked does not need the table")
	}
}
