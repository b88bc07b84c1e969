package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func keptRun(name string) string { return filepath.Join("..", "..", "docs", "runs", name) }

// TestPlanCommand predicts a kept validation point from the kept sweep and
// compares it with the kept run: every number names its source.
func TestPlanCommand(t *testing.T) {
	out, err := execute(t, "plan", keptRun("usl-zookeeper"), "--variant", "fair", "--clients", "20", "--every", "400ms", "--hold", "2ms",
		"--against", keptRun("plan-zk-fair-u20"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"measured: run usl-zookeeper, case lock/zookeeper/fair/N=", "model: simulation of", "calibration: run usl-zookeeper",
		"first to saturate:", "every variant at the same point", "naive", "validation against run plan-zk-fair-u20",
		"wait p99 (ms)", "writes/s (server)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	js, err := execute(t, "plan", keptRun("usl-etcd"), "--variant", "naive", "--clients", "8", "--think", "50ms", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Asked struct {
			Variant string `json:"variant"`
			P99     int64  `json:"p99_ns"`
		} `json:"asked"`
		Others []json.RawMessage `json:"others"`
	}
	if err := json.Unmarshal([]byte(js), &ans); err != nil || ans.Asked.Variant != "naive" || ans.Asked.P99 <= 0 || len(ans.Others) != 1 {
		t.Errorf("--json: %+v %v\n%s", ans, err, js)
	}
}

// Bad input gets an error that says what to do.
func TestPlanCommandRefuses(t *testing.T) {
	sweep, handover := keptRun("usl-zookeeper"), keptRun("handover-zookeeper")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{sweep, "--clients", "10"}, "give --variant"},
		{[]string{sweep, "--variant", "fair"}, "give --clients"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--every", "1s", "--think", "1s"}, "not both"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--target", "99=5ms"}, "pQ=BOUND"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--target", "p100=5ms"}, "between 0 and 100"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--duration", "5s"}, "only with --validate"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--require-quiet"}, "--require-quiet is read only with --validate"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--validate", "--against", sweep}, "not both"},
		{[]string{sweep, "--variant", "native", "--clients", "10"}, "they hold [naive fair]"},
		{[]string{sweep, "--variant", "fair", "--clients", "1000"}, "measure it"},
		{[]string{sweep, "--variant", "fair", "--clients", "-30"}, "--clients -30: want how many clients"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--backend", "mysql"}, `--backend "mysql": want zookeeper or etcd`},
		{[]string{sweep, sweep + "-nope", "--variant", "fair", "--clients", "10"}, "give a results file"},
		{[]string{sweep, "--variant", "fair", "--clients", "20", "--every", "400ms", "--hold", "3ms", "--against", keptRun("plan-zk-fair-u20")}, "--hold 2ms"},
		{[]string{sweep, keptRun("usl-etcd"), "--variant", "fair", "--clients", "10"}, "say which with --backend"},
		{[]string{sweep, "--workload", "queue", "--variant", "fair", "--clients", "10"}, "plan models"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--size", "1KB"}, "--size is a config center's"},
		{[]string{sweep, "--workload", "config", "--variant", "one-shot", "--clients", "10", "--size", "1KB", "--rate", "2", "--every", "1s"}, "--every is a lock's"},
		{[]string{sweep, "--workload", "config", "--variant", "one-shot", "--clients", "10", "--rate", "2"}, "give --size"},
		{[]string{sweep, "--workload", "config", "--variant", "one-shot", "--clients", "10", "--size", "1XB", "--rate", "2"}, "--size \"1XB\""},
		{[]string{sweep, "--workload", "config", "--variant", "one-shot", "--clients", "10", "--size", "1KB", "--rate", "2"}, "no usable config case"},
		{[]string{sweep, "--variant", "fair", "--clients", "10", "--session-timeout", "4s"}, "--session-timeout is a failover's"},
		{[]string{handover, "--workload", "failover", "--variant", "fair", "--clients", "30"}, "give --session-timeout"},
		{[]string{handover, "--workload", "failover", "--variant", "fair", "--clients", "30", "--session-timeout", "4s", "--every", "1s"}, "--every is a lock's"},
		{[]string{handover, "--workload", "failover", "--variant", "fair", "--clients", "30", "--session-timeout", "4s", "--failovers", "5"}, "--failovers is read only with --validate"},
		{[]string{handover, "--workload", "failover", "--variant", "fair", "--clients", "30", "--session-timeout", "4s", "--validate", "--duration", "5s"}, "not a duration"},
		{[]string{handover, "--workload", "failover", "--variant", "fair", "--clients", "30", "--session-timeout", "4s", "--tick", "3s"}, "grants sessions of"},
		{[]string{keptRun("handover-etcd"), "--workload", "failover", "--variant", "fair", "--clients", "30", "--session-timeout", "4s", "--tick", "500ms"}, "drop it"},
		{[]string{handover, "--workload", "failover", "--variant", "fair", "--clients", "1000", "--session-timeout", "4s"}, "beyond"},
		{[]string{sweep, "--workload", "failover", "--variant", "fair", "--clients", "30", "--session-timeout", "4s"}, "no usable failover"},
	} {
		_, err := execute(t, append([]string{"plan"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("plan %v: error %v, want one saying %q", c.args, err, c.want)
		}
	}
}

// TestPlanValidate runs a predicted point against a real (embedded) etcd
// and prints predicted against measured.
func TestPlanValidate(t *testing.T) {
	dir := t.TempDir()
	out, err := execute(t, "plan", keptRun("usl-etcd"), "--variant", "fair", "--clients", "4", "--every", "100ms", "--hold", "1ms",
		"--validate", "--cluster", "embedded", "--duration", "1s", "--warmup", "200ms", "-o", dir, "--run-id", "val")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"validation against run val, case lock/etcd/fair/N=4", "acquisitions/s", "writes/s (server)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A failover plan from a kept sweep against its kept validation run, and
// one validated here: two leaders crashed on an embedded etcd, each
// replaced only once its lease ran out.
func TestPlanFailover(t *testing.T) {
	out, err := execute(t, "plan", keptRun("handover-zookeeper"), "--workload", "failover", "--variant", "fair", "--clients", "30", "--session-timeout", "3s",
		"--target", "p99=3s", "--against", keptRun("plan-failover-zk-fair-a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"failover plan: zookeeper fair, 30 candidates", "basis: run handover-zookeeper", "busy leader p50",
		"answer: MISSES failover p99 ≤ 3000 ms; the longest session timeout that meets it:", "model error: predicting this way (failover)",
		"validation against run plan-failover-zk-fair-a", "failover p99 (ms)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	out, err = execute(t, "plan", keptRun("handover-etcd"), "--workload", "failover", "--variant", "fair", "--clients", "5", "--session-timeout", "2s",
		"--validate", "--cluster", "embedded", "--failovers", "2", "-o", dir, "--run-id", "val")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"EXTRAPOLATED", "validation against run val, case failover/etcd/fair/N=5", "failover p50 (ms)", "least failover (ms)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
