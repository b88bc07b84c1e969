package zookeeper

import (
	"strings"
	"testing"
	"time"
)

// TestTimingFor: a leader is given up within half the session timeout, the
// session asked for lies within what the servers grant, and a follower has
// at least 20 s for its first sync.
func TestTimingFor(t *testing.T) {
	for _, session := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 15 * time.Second, 30 * time.Second, 2 * time.Minute} {
		tm := TimingFor(session)
		if tm.GiveUp() > session/2 && tm.Tick > minTick {
			t.Errorf("session %v: the leader is given up after %v, want at most half the session", session, tm.GiveUp())
		}
		if session < 2*tm.Tick || session > tm.MaxSession {
			t.Errorf("session %v: outside what %+v grants (2 ticks to %v)", session, tm, tm.MaxSession)
		}
		if init := time.Duration(tm.InitLimit) * tm.Tick; init < initTime {
			t.Errorf("session %v: initLimit %d ticks of %v is %v, want at least %v", session, tm.InitLimit, tm.Tick, init, initTime)
		}
	}
	if tm := TimingFor(4 * time.Second); tm.Tick != 500*time.Millisecond || tm.SyncLimit != 4 {
		t.Errorf("the default 4 s session: %+v, want a 500 ms tick and syncLimit 4 (the leader given up after 2 s)", tm)
	}
	if tm := TimingFor(0); tm != DefaultTiming {
		t.Errorf("no session: %+v, want ZooKeeper's defaults %+v", tm, DefaultTiming)
	}
}

// TestTimingConfig: zoo.cfg carries the timing, and a state saved before
// the limits were recorded reads as ZooKeeper's defaults beside its tick.
func TestTimingConfig(t *testing.T) {
	m := Member{ID: 1, ClientPort: 2181, DataDir: "/d"}
	cfg := configText(m, []Member{m}, TimingFor(4*time.Second), nil)
	for _, want := range []string{"tickTime=500\n", "initLimit=40\n", "syncLimit=4\n", "maxSessionTimeout=120000\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if cfg := configText(m, []Member{m}, DefaultTiming, nil); strings.Contains(cfg, "maxSessionTimeout") {
		t.Errorf("the default timing sets maxSessionTimeout:\n%s", cfg)
	}
	old := State{TickMs: 2000}
	if got := old.Timing(); got != DefaultTiming {
		t.Errorf("an old state's timing %+v, want %+v", got, DefaultTiming)
	}
	st := State{TickMs: 500, InitLimit: 40, SyncLimit: 4, MaxSessionMs: 120000}
	if got := st.Timing(); got != TimingFor(4*time.Second) {
		t.Errorf("state %+v: timing %+v, want %+v", st, got, TimingFor(4*time.Second))
	}
}
