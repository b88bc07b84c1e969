package workloads

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

func TestLockCheckerFindsOverlap(t *testing.T) {
	c := NewLockChecker()
	a, b := c.Ask(), c.Ask()
	c.Grant(1, a, 100, time.Millisecond, 0, true)
	c.Grant(2, b, 101, 2*time.Millisecond, 0, true) // client 1 never released
	r := c.Result()
	if r.Safety.Violations != 1 || r.Safety.Checked != 2 {
		t.Fatalf("safety = %+v, want 1 violation in 2 checked", r.Safety)
	}
	if len(r.Safety.Details) != 1 || !strings.Contains(r.Safety.Details[0], "client 2 was granted the lock with token 101 while client 1 held it with token 100") {
		t.Fatalf("details = %q", r.Safety.Details)
	}
}

// TestLockCheckerPerClient: exclusion is tracked per client (by the safety
// checker): a release by a client that was not inside does not end the
// holder's section, and a token that does not grow is a violation.
func TestLockCheckerPerClient(t *testing.T) {
	c := NewLockChecker()
	c.Grant(1, c.Ask(), 10, time.Millisecond, 0, true)
	c.Release(3, 2*time.Millisecond) // client 3 never held it
	c.Grant(2, c.Ask(), 11, 3*time.Millisecond, 0, true)
	r := c.Result()
	if r.Safety.Violations != 1 || r.Exclusion.Unbalanced != 1 {
		t.Fatalf("safety %+v, exclusion %+v: want client 1 still inside at client 2's grant", r.Safety, r.Exclusion)
	}
	c.Release(1, 4*time.Millisecond)
	c.Release(2, 5*time.Millisecond)
	c.Grant(3, c.Ask(), 7, 6*time.Millisecond, 0, true) // token went back
	if r := c.Result(); r.Safety.Violations != 2 || r.Exclusion.TokenRegressions != 1 || r.Safety.Checked != 3 {
		t.Fatalf("safety %+v, exclusion %+v: want the token regression counted", r.Safety, r.Exclusion)
	}
}

func TestLockCheckerFIFOAndHandoff(t *testing.T) {
	c := NewLockChecker()
	t1 := c.Ask()
	c.Grant(1, t1, 1, 0, 0, true)
	t2, t3, t4 := c.Ask(), c.Ask(), c.Ask() // 2, 3, 4 wait in this order
	c.Release(1, 10*time.Millisecond)
	c.Grant(4, t4, 2, 13*time.Millisecond, 0, true) // 2 and 3 asked earlier: 2 inversions
	c.Release(4, 20*time.Millisecond)
	c.Withdraw(t3)
	c.Grant(2, t2, 3, 21*time.Millisecond, 0, true) // nobody earlier waits: 0
	c.Release(2, 30*time.Millisecond)
	t5 := c.Ask() // asked after the release: no handoff gap
	c.Grant(5, t5, 4, 40*time.Millisecond, 0, true)
	r := c.Result()
	if r.FIFOInversions != 2 {
		t.Errorf("FIFO inversions = %d, want 2", r.FIFOInversions)
	}
	if r.Safety.Violations != 0 || r.Safety.Checked != 4 {
		t.Errorf("safety = %+v", r.Safety)
	}
	if r.Handoff.TotalCount() != 2 {
		t.Fatalf("handoffs = %d, want 2 (3ms and 1ms)", r.Handoff.TotalCount())
	}
	if mx := time.Duration(r.Handoff.Max()); mx < 2990*time.Microsecond || mx > 3010*time.Microsecond {
		t.Errorf("longest handoff = %v, want 3ms", mx)
	}
}

// The handoff's critical path: the release call, the release to the
// grantee's last watch event, that event to the grant; a grantee with no
// event after the release is counted apart.
func TestLockCheckerHandoffPath(t *testing.T) {
	c := NewLockChecker()
	c.Grant(1, c.Ask(), 1, 0, 0, true)
	t2, t3 := c.Ask(), c.Ask()
	c.Release(1, 10*time.Millisecond)
	c.Released(2 * time.Millisecond)
	c.Grant(2, t2, 2, 14*time.Millisecond, 13*time.Millisecond, true) // notified 3 ms after the release, decided in 1 ms
	c.Release(2, 20*time.Millisecond)
	c.Released(4 * time.Millisecond)
	c.Grant(3, t3, 3, 25*time.Millisecond, 5*time.Millisecond, true) // its last event came before the release
	p := c.Result().Path
	within := func(what string, h *hdrhistogram.Histogram, n int64, lo, hi time.Duration) {
		t.Helper()
		if h.TotalCount() != n || time.Duration(h.Min()) < lo*99/100 || time.Duration(h.Max()) > hi*101/100 {
			t.Errorf("%s: %d values in [%v, %v], want %d in [%v, %v]", what, h.TotalCount(),
				time.Duration(h.Min()), time.Duration(h.Max()), n, lo, hi)
		}
	}
	within("release", p.Release, 2, 2*time.Millisecond, 4*time.Millisecond)
	within("notify", p.Notify, 1, 3*time.Millisecond, 3*time.Millisecond)
	within("decide", p.Decide, 1, time.Millisecond, time.Millisecond)
	if p.Unnotified != 1 {
		t.Errorf("unnotified handoffs = %d, want 1", p.Unnotified)
	}
}

func TestLockCheckerWindowLeavesOutTheStartBurst(t *testing.T) {
	c := NewLockChecker()
	burst := []int{c.Ask(), c.Ask(), c.Ask()} // all at once, before the window
	c.OpenWindow()
	late := c.Ask()
	c.Grant(3, burst[2], 1, 0, 0, true) // two earlier burst asks wait: not counted
	c.Release(3, time.Millisecond)
	c.Grant(4, late, 2, 2*time.Millisecond, 0, true) // asked in the window, passes 2 waiters: counted
	if r := c.Result(); r.FIFOInversions != 2 {
		t.Fatalf("FIFO inversions = %d, want 2 (only the grant asked in the window)", r.FIFOInversions)
	}
}

func TestFenwickAgainstScan(t *testing.T) {
	var f fenwick
	var vals []int
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		i := rng.IntN(5000)
		if rng.IntN(3) == 0 {
			i = len(vals) + rng.IntN(3) // grow at the edge
		}
		for len(vals) <= i {
			vals = append(vals, 0)
		}
		vals[i]++
		f.add(i, 1)
		q := rng.IntN(len(vals))
		want := 0
		for _, v := range vals[:q+1] {
			want += v
		}
		if got := f.prefix(q); got != want {
			t.Fatalf("prefix(%d) = %d, want %d", q, got, want)
		}
	}
}

func TestJain(t *testing.T) {
	if j := results.JainIndex([]int64{5, 5, 5, 5}); j != 1 {
		t.Errorf("equal shares: %v", j)
	}
	if j := results.JainIndex([]int64{8, 0, 0, 0}); j != 0.25 {
		t.Errorf("one client: %v", j)
	}
	if j := results.JainIndex([]int64{0, 0}); j != 0 {
		t.Errorf("nothing: %v", j)
	}
}

func TestCheckClientLimit(t *testing.T) {
	zk := backends.ClusterInfo{Kind: backends.ZooKeeper, MaxClientCnxns: 60}
	if err := CheckClientLimit(zk, 59); err != nil {
		t.Fatal(err)
	}
	err := CheckClientLimit(zk, 100)
	if err == nil || !strings.Contains(err.Error(), "maxClientCnxns=0") || !strings.Contains(err.Error(), "allow 60") {
		t.Fatalf("CheckClientLimit(60, 100) = %v", err)
	}
	for _, info := range []backends.ClusterInfo{
		{Kind: backends.ZooKeeper, MaxClientCnxns: 0},
		{Kind: backends.ZooKeeper, MaxClientCnxns: -1},
		{Kind: backends.Etcd, MaxClientCnxns: 10},
	} {
		if err := CheckClientLimit(info, 10000); err != nil {
			t.Errorf("%+v: %v", info, err)
		}
	}
}

func TestSeriesMerge(t *testing.T) {
	a, b := measure.NewSeriesRecorder(100*time.Millisecond), measure.NewSeriesRecorder(100*time.Millisecond)
	a.Add(50 * time.Millisecond)
	a.Add(250 * time.Millisecond)
	b.Add(260 * time.Millisecond)
	b.Add(900 * time.Millisecond) // after the end: counted in the last bucket
	s := measure.MergeSeries(100*time.Millisecond, 300*time.Millisecond, a, b)
	want := []int64{1, 0, 3}
	if len(s.Counts) != 3 || s.Counts[0] != want[0] || s.Counts[1] != want[1] || s.Counts[2] != want[2] {
		t.Fatalf("series = %v, want %v", s.Counts, want)
	}
}

func TestCaseValidate(t *testing.T) {
	ok := Case{Backend: fakeKind{}, Clients: 1, Namespace: "/zkbench/x/y", Config: results.Config{Duration: time.Second}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(c *Case){
		"no clients":   func(c *Case) { c.Clients = 0 },
		"no bound":     func(c *Case) { c.Config.Duration = 0 },
		"outside":      func(c *Case) { c.Namespace = "/other" },
		"root itself":  func(c *Case) { c.Namespace = "/zkbench" },
		"negative":     func(c *Case) { c.Config.Hold = -1 },
		"no backend":   func(c *Case) { c.Backend = nil },
		"negative ops": func(c *Case) { c.Config.Ops = -1 },
	}
	for name, change := range bad {
		c := ok
		change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// fakeKind is only a non-nil Backend for Case.Validate; it opens nothing.
type fakeKind struct{ backends.Backend }
