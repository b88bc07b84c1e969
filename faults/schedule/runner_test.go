package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTarget records calls with their time since start. It stands in for a
// cluster only to test the runner's timing and bookkeeping; the real Target
// over local servers and proxies is tested in cmd/zkbench.
type fakeTarget struct {
	start   time.Time
	servers int
	leader  int
	failOn  string

	mu    sync.Mutex
	calls []call
	down  map[int]bool
}

type call struct {
	at   time.Duration
	what string
}

func newFake(servers, leader int) *fakeTarget {
	return &fakeTarget{start: time.Now(), servers: servers, leader: leader, down: map[int]bool{}}
}

func (f *fakeTarget) log(what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{time.Since(f.start), what})
	if f.failOn != "" && strings.HasPrefix(what, f.failOn) {
		return errors.New("injected failure")
	}
	return nil
}

func (f *fakeTarget) whats() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.what)
	}
	return out
}

func (f *fakeTarget) at(what string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.what == what {
			return c.at
		}
	}
	return -1
}

func (f *fakeTarget) Limits() Limits {
	return Limits{Servers: f.servers, Clients: 8, Network: true, Workers: true, Expire: true, Kill: true, Holders: true}
}

func (f *fakeTarget) KillServer(_ context.Context, i int) error {
	f.mu.Lock()
	f.down[i] = true
	f.mu.Unlock()
	return f.log(fmt.Sprintf("kill %d", i))
}

func (f *fakeTarget) RestartServer(ctx context.Context, i int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.down, i)
	f.mu.Unlock()
	return f.log(fmt.Sprintf("restart %d", i))
}

func (f *fakeTarget) PauseServer(i int) error  { return f.log(fmt.Sprintf("pause-server %d", i)) }
func (f *fakeTarget) ResumeServer(i int) error { return f.log(fmt.Sprintf("resume-server %d", i)) }
func (f *fakeTarget) Leader(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[f.leader] {
		return -1, errors.New("no leader")
	}
	return f.leader, nil
}
func (f *fakeTarget) SetLatency(b, j time.Duration) error {
	return f.log(fmt.Sprintf("latency %v %v", b, j))
}
func (f *fakeTarget) Cut(c int) error          { return f.log(fmt.Sprintf("cut %d", c)) }
func (f *fakeTarget) Restore(c int) error      { return f.log(fmt.Sprintf("restore %d", c)) }
func (f *fakeTarget) Reset(c int) (int, error) { return 7, f.log(fmt.Sprintf("reset %d", c)) }
func (f *fakeTarget) PauseClient(c int) error  { return f.log(fmt.Sprintf("pause-client %d", c)) }
func (f *fakeTarget) ResumeClient(c int) error { return f.log(fmt.Sprintf("resume-client %d", c)) }
func (f *fakeTarget) ExpireSession(_ context.Context, c int) error {
	return f.log(fmt.Sprintf("expire %d", c))
}

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Event(kind, what string, client int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s|%s|%d", kind, what, client))
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func mustParse(t *testing.T, specs ...string) []Fault {
	t.Helper()
	fs, err := ParseAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(fs, newFake(3, 0).Limits()); err != nil {
		t.Fatal(err)
	}
	return fs
}

// runUntil is Run with a ctx that ends once done holds of tg's calls so
// far (polled), or after a minute: the tests check when each fault fired
// and what the end of the run undid, and on a loaded machine a fault fires
// late, so a ctx that ends a fixed moment after the last one's time may end
// before it fires.
func runUntil(t *testing.T, tg *fakeTarget, fs []Fault, rec Recorder, done func(calls []string) bool) Report {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		for deadline := time.Now().Add(time.Minute); !done(tg.whats()) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}()
	return Run(ctx, tg.start, fs, tg, rec)
}

// hasAll reports whether calls holds every one of want.
func hasAll(want ...string) func(calls []string) bool {
	return func(calls []string) bool {
		for _, w := range want {
			if !slices.Contains(calls, w) {
				return false
			}
		}
		return true
	}
}

func TestRunFiresAtTimesAndUndoes(t *testing.T) {
	fs := mustParse(t,
		"kill-server:1@20ms+60ms",
		"latency:5ms±1ms@10ms+30ms",
		"cut-client:3@30ms+20ms",
		"reset-conns@40ms",
		"expire-session:2@50ms",
		"pause-client:4@10ms+100ms",
	)
	tg := newFake(3, 0)
	rec := &recorder{}
	rep := runUntil(t, tg, fs, rec, func(calls []string) bool { return len(calls) >= 10 })

	for _, c := range []struct {
		what string
		min  time.Duration
	}{
		{"latency 5ms 1ms", 10 * time.Millisecond},
		{"kill 1", 20 * time.Millisecond},
		{"cut 3", 30 * time.Millisecond},
		{"reset -1", 40 * time.Millisecond},
		{"latency 0s 0s", 40 * time.Millisecond},
		{"expire 2", 50 * time.Millisecond},
		{"restore 3", 50 * time.Millisecond},
		{"restart 1", 80 * time.Millisecond},
		{"pause-client 4", 10 * time.Millisecond},
		{"resume-client 4", 110 * time.Millisecond},
	} {
		at := tg.at(c.what)
		if at < 0 {
			t.Errorf("%q never called; calls: %v", c.what, tg.whats())
			continue
		}
		if at < c.min {
			t.Errorf("%q at %v, before its time %v", c.what, at, c.min)
		}
	}
	if len(tg.whats()) != 10 {
		t.Errorf("calls = %v, want exactly 10", tg.whats())
	}
	want := map[Action]int{KillServer: 1, Latency: 1, CutClient: 1, ResetConns: 1, ExpireSession: 1, PauseClient: 1}
	if fmt.Sprint(rep.Injected) != fmt.Sprint(want) || rep.Undone != 4 || rep.Skipped != 0 || len(rep.Failures) != 0 {
		t.Errorf("report = %+v", rep)
	}
	ev := rec.all()
	for _, w := range []string{
		"fault|kill-server:1|-1", "fault|end kill-server:1: restart-server:1|-1",
		"fault|cut-client:3|3", "fault|end cut-client:3: restore cut-client:3|3",
		"fault|reset-conns: 7 connections|-1", "fault|expire-session:2|2",
		"fault|latency:5ms±1ms|-1", "fault|end latency:5ms±1ms: latency off|-1",
	} {
		if !slices.Contains(ev, w) {
			t.Errorf("timeline lacks %q: %v", w, ev)
		}
	}
}

func TestRunUndoesEverythingInForceAtTheEnd(t *testing.T) {
	fs := mustParse(t,
		"kill-server:2@0s", // no +FOR: in force until the end
		"pause-server:0@0s+1h",
		"cut-all@0s",
		"pause-client:1@0s+1h",
		"kill-leader@1h", // never starts
	)
	tg := newFake(3, 0)
	rec := &recorder{}
	rep := runUntil(t, tg, fs, rec, hasAll("kill 2", "pause-server 0", "cut -1", "pause-client 1"))
	calls := tg.whats()
	idx := func(w string) int { return slices.Index(calls, w) }
	for _, w := range []string{"resume-server 0", "resume-client 1", "restore -1", "restart 2"} {
		if idx(w) < 0 {
			t.Fatalf("end of run did not %q; calls %v", w, calls)
		}
	}
	// Resumes before network before restarts.
	if !(idx("resume-server 0") < idx("restore -1") && idx("resume-client 1") < idx("restore -1") && idx("restore -1") < idx("restart 2")) {
		t.Errorf("undo order wrong: %v", calls)
	}
	if rep.Skipped != 1 || rep.Undone != 4 || rep.Total() != 4 {
		t.Errorf("report = %+v", rep)
	}
	if !slices.Contains(rec.all(), "fault|end of run: restart-server:2|-1") {
		t.Errorf("timeline: %v", rec.all())
	}
}

func TestRunKillServersFollowersFirstAndRestartsTogether(t *testing.T) {
	tg := newFake(3, 1) // server 1 leads
	rec := &recorder{}
	// The leader's kill a second after the followers', so that it is the
	// later one however late a loaded machine runs either.
	rep := runUntil(t, tg, mustParse(t, "kill-servers:2@0s+20ms", "kill-leader@1s+10ms"), rec,
		hasAll("restart 0", "restart 2", "kill 1", "restart 1"))
	calls := tg.whats()
	if len(calls) < 6 || calls[0] != "kill 0" || calls[1] != "kill 2" {
		t.Fatalf("calls = %v, want followers 0 and 2 killed first", calls)
	}
	if !slices.Contains(calls, "restart 0") || !slices.Contains(calls, "restart 2") {
		t.Fatalf("calls = %v, want both restarted", calls)
	}
	if tg.at("kill 1") < time.Second || tg.at("restart 1") < time.Second+10*time.Millisecond {
		t.Fatalf("kill-leader timing: %v", calls)
	}
	if !slices.Contains(rec.all(), "fault|kill-servers:2: servers 0,2|-1") || !slices.Contains(rec.all(), "fault|kill-leader: server 1|-1") {
		t.Fatalf("timeline: %v", rec.all())
	}
	if rep.Total() != 2 || rep.Undone != 3 {
		t.Fatalf("report %+v", rep)
	}
}

func TestRunRecordsFailuresAndGoesOn(t *testing.T) {
	tg := newFake(3, 0)
	tg.failOn = "kill"
	rec := &recorder{}
	// Once the cut is restored, well after the failed kill's 10 ms.
	rep := runUntil(t, tg, mustParse(t, "kill-server:1@0s+10ms", "cut-client:0@5ms+100ms"), rec, hasAll("kill 1", "restore 0"))
	if len(rep.Failures) != 1 || !strings.Contains(rep.Failures[0], "kill-server:1 failed: injected failure") {
		t.Fatalf("failures = %v", rep.Failures)
	}
	if rep.Injected[CutClient] != 1 || slices.Contains(tg.whats(), "restart 1") {
		t.Fatalf("report %+v calls %v: the failed kill must not be undone", rep, tg.whats())
	}
	if !slices.Contains(rec.all(), "fault|kill-server:1 failed: injected failure|-1") {
		t.Fatalf("timeline %v", rec.all())
	}
}

func TestRestartServerTakesOverAKill(t *testing.T) {
	tg := newFake(3, 0)
	// restart-server ends the kill early; the kill's +FOR then has nothing
	// to undo. A second apart, so that a loaded machine keeps their order;
	// the ctx outlasts the +FOR.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rep := Run(ctx, tg.start, mustParse(t, "kill-server:1@0s+1s", "restart-server:1@50ms"), tg, nil)
	calls := tg.whats()
	if n := strings.Count(strings.Join(calls, ","), "restart 1"); n != 1 {
		t.Fatalf("calls %v: want one restart of server 1", calls)
	}
	if rep.Undone != 0 || rep.Total() != 2 {
		t.Fatalf("report %+v", rep)
	}
}

// killerTarget is a fakeTarget that can kill clients.
type killerTarget struct{ *fakeTarget }

func (k killerTarget) KillClient(c int) error { return k.log(fmt.Sprintf("kill-client %d", c)) }
func (k killerTarget) KillHolder() error      { return k.log("kill-holder") }

// TestRunKills: kill-client and kill-holder reach a Killer once each and
// are never undone; a target that cannot kill records a failure.
func TestRunKills(t *testing.T) {
	fs := mustParse(t, "kill-client:2@0s", "kill-holder@5ms")
	run := func(tg Target, fake *fakeTarget, rec *recorder, done func() bool) Report {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			defer cancel()
			for deadline := time.Now().Add(time.Minute); !done() && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}()
		return Run(ctx, fake.start, fs, tg, rec)
	}
	k := killerTarget{newFake(1, 0)}
	rec := &recorder{}
	rep := run(k, k.fakeTarget, rec, func() bool { return hasAll("kill-client 2", "kill-holder")(k.whats()) })
	if rep.Injected[KillClient] != 1 || rep.Injected[KillHolder] != 1 || rep.Undone != 0 || len(rep.Failures) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if !slices.Contains(rec.all(), "fault|kill-holder: armed: the next holder mid-work|-1") {
		t.Fatalf("timeline %v", rec.all())
	}
	plain := newFake(1, 0)
	rec = &recorder{}
	rep = run(plain, plain, rec, func() bool { return len(rec.all()) >= 2 })
	if len(rep.Failures) != 2 || !strings.Contains(rep.Failures[0], "clients cannot be killed here") {
		t.Fatalf("kills on a target that cannot: failures %v", rep.Failures)
	}
}
