package backends

import (
	"errors"
	"testing"
)

func TestMetricsDelta(t *testing.T) {
	before := Metrics{MetricWrites: 10, MetricReads: 5, "raw_moved": 1, "raw_still": 7, MetricResidentBytes: 100}
	after := Metrics{MetricWrites: 15, MetricReads: 5, "raw_moved": 4, "raw_still": 7, MetricResidentBytes: 80, "raw_new": 2}
	d := after.Delta(before)
	want := Metrics{MetricWrites: 5, MetricReads: 0, "raw_moved": 3, MetricResidentBytes: 80, "raw_new": 2}
	if len(d) != len(want) {
		t.Fatalf("Delta = %v, want %v", d, want)
	}
	for k, v := range want {
		if got, ok := d[k]; !ok || got != v {
			t.Errorf("Delta[%q] = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := d["raw_still"]; ok {
		t.Errorf("an unchanged raw counter was kept: %v", d)
	}
}

func TestInNamespace(t *testing.T) {
	for p, want := range map[string]bool{
		"/zkbench/run-1":         true,
		"/zkbench/run-1/lock/a":  true,
		"/zkbench":               false,
		"/zkbench/":              false,
		"/zkbenchx/run":          false,
		"/zkbench/../etc":        false,
		"/zkbench/run/../../etc": false,
		"/other":                 false,
		"zkbench/run":            false,
		"/zkbench/.hidden":       false,
	} {
		if got := InNamespace(p); got != want {
			t.Errorf("InNamespace(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestValidRunID(t *testing.T) {
	for _, ok := range []string{"run-1", "20261129-203650-3a0e5a", "a.b_c"} {
		if err := ValidRunID(ok); err != nil {
			t.Errorf("ValidRunID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "..", ".", "a/b", "a b", string(make([]byte, 65))} {
		if err := ValidRunID(bad); err == nil {
			t.Errorf("ValidRunID(%q) accepted", bad)
		}
	}
}

// Every member of a ZooKeeper ensemble counts the writes below /zkbench
// that the ensemble applied: summed over three members they would be the
// clients' three times. The other counters are each member's own clients'.
func TestSumMembersTakesReplicatedCountersOnce(t *testing.T) {
	members := []MemberMetrics{
		{Metrics: Metrics{MetricNamespaceWrites: 1462, MetricWrites: 500}},
		{Metrics: Metrics{MetricNamespaceWrites: 1462, MetricWrites: 900}},
		{Metrics: Metrics{MetricNamespaceWrites: 1460, MetricWrites: 60}},
		{Err: errors.New("down"), Metrics: Metrics{MetricNamespaceWrites: 9999}},
	}
	got := SumMembers(members)
	if got[MetricNamespaceWrites] != 1462 || got[MetricWrites] != 1460 {
		t.Errorf("SumMembers = %v; want namespace writes 1462 (the largest member's) and writes 1460 (the sum)", got)
	}
}
