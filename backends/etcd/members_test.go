package etcd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
)

// TestScrapeMembers reads each member of a 3-member cluster of processes on
// its own: every member answers with the canonical counters and its
// process start; a killed member has an error while the others answer, and
// a restarted one reports a later start.
func TestScrapeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 etcd processes")
	}
	l := startLocal(t, 3)
	b, err := etcd.New(etcd.Config{Endpoints: l.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	read := func() map[string]backends.MemberMetrics {
		ms, err := b.ScrapeMembers(ctxFor(t, 20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]backends.MemberMetrics{}
		for _, m := range ms {
			if strings.Contains(m.Endpoint, "/") {
				t.Errorf("endpoint %q is not host:port", m.Endpoint)
			}
			out[m.Endpoint] = m
		}
		return out
	}
	first := read()
	if len(first) != 3 {
		t.Fatalf("%d members", len(first))
	}
	for ep, m := range first {
		if m.Err != nil {
			t.Fatalf("%s: %v", ep, m.Err)
		}
		if _, ok := m.Metrics[backends.MetricWrites]; !ok {
			t.Errorf("%s: no canonical writes", ep)
		}
		if age := time.Since(m.Started); m.Started.IsZero() || age < 0 || age > time.Hour {
			t.Errorf("%s: process started %v ago", ep, age)
		}
	}
	victim := strings.TrimPrefix(strings.TrimPrefix(l.Endpoints()[1], "http://"), "https://")
	if err := l.Kill(1); err != nil {
		t.Fatal(err)
	}
	down := read()
	if down[victim].Err == nil {
		t.Errorf("killed member %s answered", victim)
	}
	for ep, m := range down {
		if ep != victim && m.Err != nil {
			t.Errorf("%s did not answer with one member down: %v", ep, m.Err)
		}
	}
	if err := l.Restart(ctxFor(t, 60*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	again := read()[victim]
	if again.Err != nil || !again.Started.After(first[victim].Started) {
		t.Errorf("restarted member: err %v, started %v, before %v", again.Err, again.Started, first[victim].Started)
	}
}
