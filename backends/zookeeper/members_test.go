package zookeeper_test

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestScrapeMembers reads a live server and a dead endpoint member by
// member: the live one's counters and its statistics' start come back, the
// dead one has an error, and Scrape sums the live one with an error naming
// the other. Live server PIDs are asked at every scrape.
func TestScrapeMembers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	live := testcluster.ZooKeeperEndpoints(t)[0]
	asked := 0
	b, err := zookeeper.New(zookeeper.Config{Endpoints: []string{live, dead}, SessionTimeout: 4 * time.Second},
		zookeeper.WithServerPIDFunc(func() map[string]int {
			asked++
			return map[string]int{dead: os.Getpid()} // the dead endpoint's process: ours, readable
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ms, err := b.ScrapeMembers(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || asked != 1 {
		t.Fatalf("%d members, PIDs asked %d times", len(ms), asked)
	}
	for _, m := range ms {
		switch m.Endpoint {
		case live:
			if m.Err != nil {
				t.Fatalf("live member: %v", m.Err)
			}
			if _, ok := m.Metrics[backends.MetricWrites]; !ok {
				t.Errorf("no canonical writes: %v", m.Metrics)
			}
			if _, ok := m.Metrics[backends.MetricCPUSeconds]; ok {
				t.Errorf("CPU of a member whose process is unknown")
			}
			if age := time.Since(m.StatsStarted); m.StatsStarted.IsZero() || age <= 0 || age > 24*time.Hour {
				t.Errorf("statistics started %v ago", age)
			}
			if !strings.Contains(strings.Join(m.Restartable, " "), "zk_packets_received") {
				t.Errorf("restartable %v", m.Restartable)
			}
		case dead:
			if m.Err == nil || m.Metrics != nil {
				t.Errorf("dead member: err %v, metrics %v", m.Err, m.Metrics)
			}
		default:
			t.Errorf("member %q", m.Endpoint)
		}
	}
	sum, err := b.Scrape(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), dead) {
		t.Errorf("Scrape error %v, want one naming %s", err, dead)
	}
	if sum[zookeeper.MetricMembersScraped] != 1 || sum[backends.MetricWrites] < 0 {
		t.Errorf("sum %v", sum)
	}
}
