package calibrate

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// namespace makes the test's namespace on b, from a session open until the
// test ends, and returns it with a context that ends after d or with the
// test.
func namespace(t *testing.T, b backends.Backend, d time.Duration) (context.Context, string) {
	t.Helper()
	ns := testcluster.TestNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	s, err := b.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.EnsurePath(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ctx, ns
}

func TestRun(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		ctx, ns := namespace(t, b, 2*time.Minute)
		scraper, canScrape := b.(backends.Scraper)
		var (
			before backends.Metrics
			err    error
		)
		if canScrape {
			if before, err = scraper.Scrape(ctx); err != nil {
				t.Fatal(err)
			}
		}

		// Every phase must count an operation: 1 s is hundreds of them on a
		// quiet machine, and tens where one takes 50 ms.
		const pace = 20 * time.Millisecond
		cal, err := Run(ctx, b, ns, WithPhaseDuration(time.Second), WithSessions(4), WithPace(pace))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: writes/s %.0f, reads/s %.0f, RTT %v, write %v, notify %v, handoff bound %v",
			b.Kind(), cal.WritesPerSec, cal.ReadsPerSec, cal.RTT, cal.WriteLatency, cal.NotifyLatency, cal.HandoffBound)
		var names []string
		var writes int64
		for _, p := range cal.Phases {
			names = append(names, p.Name)
			t.Logf("  %-18s %6d ops %3d errors in %v: %.0f/s, p50 %v", p.Name, p.Ops, p.Errors, p.Elapsed.Round(time.Millisecond), p.Rate, time.Duration(p.Latency.P50))
			if p.Ops <= 0 || p.Errors != 0 || p.Rate <= 0 || p.Latency == nil || p.Latency.Count <= 0 {
				t.Errorf("phase %+v", p)
			}
			if p.Kind == "write" {
				writes += p.Ops
			}
		}
		if want := []string{"sequential_create", "sequential_get", "sequential_delete", "watch_notify", "concurrent_write", "concurrent_read", "watch_notify_paced"}; !slices.Equal(names, want) {
			t.Fatalf("phases %v, want %v", names, want)
		}
		// The paced phase idled the pace before each delete: its ops fit
		// its elapsed time only that way.
		if p := cal.Phases[6]; time.Duration(p.Ops)*pace > p.Elapsed {
			t.Errorf("watch_notify_paced: %d ops in %v, more than one a %v pause allows", p.Ops, p.Elapsed, pace)
		}
		if cal.NotifyPace != pace || cal.PacedNotifyLatency <= 0 {
			t.Errorf("paced notify: pace %v latency %v, want pace %v and a latency", cal.NotifyPace, cal.PacedNotifyLatency, pace)
		}
		if cal.Backend != b.Kind() || cal.Sessions != 4 || cal.WritesPerSec <= 0 || cal.ReadsPerSec <= 0 || cal.RTT <= 0 ||
			cal.WriteLatency <= 0 || cal.NotifyLatency <= 0 {
			t.Fatalf("calibration %+v", cal)
		}
		// The bound counts what the fair lock's handoff makes: a commit
		// and a notification (the successor reads nothing).
		if bound := cal.NotifyLatency; cal.HandoffBound != bound {
			t.Errorf("handoff bound %v on %s, want %v (notify %v, round trip %v)", cal.HandoffBound, b.Kind(), bound, cal.NotifyLatency, cal.RTT)
		}
		// Every create and delete calibration counted reached the server:
		// the server's write counter moved at least as much.
		if canScrape {
			after, err := scraper.Scrape(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := after.Delta(before)[backends.MetricWrites]; ok && d < float64(writes) {
				t.Errorf("server counted %v writes, calibration %d", d, writes)
			}
		}
		// Nothing is left below the namespace.
		names, err = b.(backends.Admin).List(ctx, ns)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			t.Fatal(err)
		}
		if slices.Contains(names, Dir) {
			t.Errorf("%s/%s left behind: %v", ns, Dir, names)
		}
	})
}

// TestRunContended: WithContention adds the contended notify phase, whose
// side writes all reached the servers and were removed again.
func TestRunContended(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		ctx, ns := namespace(t, b, 5*time.Minute)
		cal, err := Run(ctx, b, ns, WithPhaseDuration(500*time.Millisecond), WithSessions(2), WithContention())
		if err != nil {
			t.Fatal(err)
		}
		last := cal.Phases[len(cal.Phases)-1]
		t.Logf("%s: notify %v, contended %v (%d ops)", b.Kind(), cal.NotifyLatency, cal.ContendedNotifyLatency, last.Ops)
		if len(cal.Phases) != 7 || last.Name != "watch_notify_contended" || last.Ops <= 0 || last.Errors != 0 {
			t.Fatalf("phases %+v, want the contended phase last, with ops and no error", cal.Phases)
		}
		if cal.ContendedNotifyLatency != time.Duration(last.Latency.P50) || cal.ContendedNotifyLatency <= 0 || cal.PacedNotifyLatency != 0 {
			t.Errorf("contended notify %v, phase p50 %v, paced %v", cal.ContendedNotifyLatency, time.Duration(last.Latency.P50), cal.PacedNotifyLatency)
		}
		names, err := b.(backends.Admin).List(ctx, ns)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			t.Fatal(err)
		}
		if slices.Contains(names, Dir) {
			t.Errorf("%s/%s left behind: %v", ns, Dir, names)
		}
	})
}

func TestRunCancel(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		ctx, ns := namespace(t, b, 5*time.Minute)
		// Phases of 2 min: a Run that returns within 30 s of the cancel
		// returned because of it, however slow the machine.
		rctx, rcancel := context.WithCancel(ctx)
		var cancelled time.Time
		time.AfterFunc(500*time.Millisecond, func() { cancelled = time.Now(); rcancel() })
		cal, err := Run(rctx, b, ns, WithPhaseDuration(2*time.Minute), WithSessions(2))
		if !errors.Is(err, context.Canceled) || cal != nil {
			t.Fatalf("Run after cancel = %v, %v; want context.Canceled", cal, err)
		}
		took := time.Since(cancelled)
		if took > 30*time.Second {
			t.Errorf("Run took %v to return after cancel", took)
		}
		t.Logf("returned %v after the cancel", took.Round(time.Millisecond))
		names, err := b.(backends.Admin).List(ctx, ns)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			t.Fatal(err)
		}
		if slices.Contains(names, Dir) {
			t.Errorf("%s/%s left behind after cancel: %v", ns, Dir, names)
		}
	})
}

func TestRunRejectsNamespace(t *testing.T) {
	for _, ns := range []string{"/", "/zkbench", "/other/x", "zkbench/x", "/zkbench/../etc"} {
		if _, err := Run(context.Background(), nil, ns); !errors.Is(err, ErrNamespace) {
			t.Errorf("Run(%q) = %v, want ErrNamespace", ns, err)
		}
	}
}

// An iteration of the contended phase that fails before its delete (here
// its node already exists) returns the error and makes no create: it does
// not wait for one.
func TestNotifyBehindFailsBeforeDelete(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		ctx, ns := namespace(t, b, time.Minute)
		var ss [3]backends.Session
		for i := range ss {
			s, err := b.NewSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ss[i] = s
		}
		p, side := ns+"/node", ns+"/side"
		if _, err := ss[1].Create(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := notifyBehind(ctx, ss[0], ss[1], ss[2], p, side)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, backends.ErrNodeExists) {
				t.Errorf("notifyBehind on an existing node = %v, want ErrNodeExists", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("notifyBehind did not return after its create of the node failed")
		}
		if _, _, err := ss[0].Get(ctx, side); !errors.Is(err, backends.ErrNoNode) {
			t.Errorf("reading the side node: %v, want ErrNoNode: the failed iteration made a create", err)
		}
	})
}
