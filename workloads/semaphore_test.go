package workloads

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
)

// holdersNote reads the semaphore workload's note on the holders: the most
// at a grant, the permits, and the most at one instant in the history.
var holdersNote = regexp.MustCompile(`^holders at once: [0-9.]+ on average at a grant, (\d+) at most \((\d+) permits; most at one instant in the history of \d+ grants: (\d+)\)$`)

// TestSemaphoreEveryVariant runs every semaphore variant on both backends
// with more clients than permits: the checker never saw more than K
// holders (online, nor in the history of grants and releases), it saw K
// at once, every grant is in the histogram, nothing is left, and the naive
// variant's notifications an acquisition (its herd: every waiter wakes at
// every change) are well above the fair one's (about two: the gate holder
// and the next in the gate), on the clients and on the servers.
func TestSemaphoreEveryVariant(t *testing.T) {
	const permits = 3
	cfg := results.Config{Duration: 2 * time.Second, Hold: 50 * time.Millisecond,
		Params: map[string]string{ParamPermits: strconv.Itoa(permits)}}
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		w := NewSemaphore()
		got := map[string]results.Result{}
		for _, v := range semaphoreSpec().VariantNames(b.Kind()) {
			t.Run(v, func(t *testing.T) {
				cfg := cfg
				var res results.Result
				testcluster.Widen(t, cfg.Duration, func(window time.Duration) string {
					cfg.Duration = window
					res = runShared(t, w, b, v, 12, cfg)
					if res.Ops.Succeeded < 30 {
						return fmt.Sprintf("%d grants", res.Ops.Succeeded)
					}
					return ""
				})
				got[v] = res
				if res.Safety.Violations != 0 || res.Safety.Checked < res.Ops.Succeeded {
					t.Fatalf("safety %+v for %d grants", res.Safety, res.Ops.Succeeded)
				}
				if h := res.Latency["acquire"]; h == nil || h.Count != res.Ops.Succeeded {
					t.Fatalf("acquire histogram does not hold every grant once: %d grants", res.Ops.Succeeded)
				}
				var m []string
				for _, n := range res.Notes {
					if m = holdersNote.FindStringSubmatch(n); m != nil {
						break
					}
				}
				if m == nil {
					t.Fatalf("no note on the holders: %q", res.Notes)
				}
				atGrant, _ := strconv.Atoi(m[1])
				k, _ := strconv.Atoi(m[2])
				inHistory, _ := strconv.Atoi(m[3])
				if k != permits || atGrant != permits || inHistory != permits {
					t.Errorf("%d permits: at most %d holders at a grant, %d at one instant in the history; want exactly %d (12 clients contend)",
						k, atGrant, inHistory, permits)
				}
			})
		}
		naive, fair := got["naive"], got["fair"]
		for _, key := range []string{"watch_events", "server_watch_events"} {
			n, f := naive.PerOp[key], fair.PerOp[key]
			t.Logf("%s per acquisition: naive %.2f, fair %.2f", key, n, f)
			if f <= 0 || n < 2*f {
				t.Errorf("%s per acquisition: naive %.2f, fair %.2f: want the naive herd at least twice the fair", key, n, f)
			}
		}
		if n, f := naive.PerOp["wasted_wakeups"], fair.PerOp["wasted_wakeups"]; n <= f {
			t.Errorf("naive wasted %.2f wake-ups per acquisition, fair %.2f: want more", n, f)
		}
		if f := fair.PerOp["watch_events"]; f > 3 {
			t.Errorf("fair woke clients %.2f times an acquisition, want about 2 whatever the clients", f)
		}
	})
}

// TestSemaphoreParams: --permits defaults to DefaultPermits, and a count
// below one is refused, naming the parameter.
func TestSemaphoreParams(t *testing.T) {
	got, err := semaphoreSpec().ParamsFor(nil)
	if err != nil || got[ParamPermits] != DefaultPermits {
		t.Errorf("defaults %v, %v", got, err)
	}
	if _, err := semaphoreSpec().ParamsFor(map[string]string{ParamPermits: "0"}); !errors.Is(err, ErrBadCase) ||
		!strings.Contains(err.Error(), "permits") {
		t.Errorf("0 permits: %v", err)
	}
}
