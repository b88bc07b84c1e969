package zookeeper

import (
	"strconv"
	"time"
)

// Timing is an ensemble's clock: its tick and the limits counted in ticks.
//
// An ensemble tracks every session on its leader: a follower answers its
// clients' pings and passes their touches on with the leader's next ping.
// A leader cut off from its followers (a partition, a frozen process) stays
// leader until it misses its followers' acks for SyncLimit ticks, and the
// followers keep it until they miss its pings for as long; meanwhile it
// expires every session whose touches it no longer gets, and those
// expiries commit as soon as it reaches a quorum again. So with ZooKeeper's
// defaults (a 2 s tick, syncLimit 5: 10 s) and a 4 s session, a leader
// partitioned for 5 s ends every session of the ensemble at the heal
// (docs/docker.md, "The leader partitioned"). Sessions survive a lost
// leader only when the followers give it up, elect another and the clients
// reconnect within the session timeout: the new leader restarts every
// session's clock.
type Timing struct {
	Tick time.Duration
	// InitLimit bounds a follower's first sync with a new leader;
	// SyncLimit is how long a leader and its followers wait for each
	// other before they give up the leadership.
	InitLimit, SyncLimit int
	// MaxSession is the longest session timeout the servers grant; zero
	// leaves ZooKeeper's default, 20 ticks.
	MaxSession time.Duration
}

// DefaultTiming is ZooKeeper's own: for clusters started without a session
// timeout to serve.
var DefaultTiming = Timing{Tick: 2 * time.Second, InitLimit: 10, SyncLimit: 5}

// Limits of TimingFor.
const (
	minTick = 100 * time.Millisecond
	maxTick = 2 * time.Second
	// syncTicks: a lost leader is given up after half the session
	// timeout, which leaves the other half for the election and the
	// clients' reconnect.
	syncTicks = 4
	// initTime bounds a follower's sync with a new leader (a snapshot of
	// a large run's tree on a loaded machine).
	initTime = 20 * time.Second
	// maxSessionTime is the longest session a zkbench cluster grants: a
	// run's automatic timeouts stay below it (runner.maxAutoTimeout).
	maxSessionTime = 2 * time.Minute
)

// MinSession is the shortest session timeout a zkbench cluster grants:
// ZooKeeper grants none below 2 ticks, and TimingFor's tick is at least
// minTick. A shorter one asked for would be raised to it, and a run would
// record a timeout its sessions did not have.
const MinSession = 2 * minTick

// TimingFor is the timing under which an ensemble replaces a lost or
// partitioned leader before a session of the given timeout expires: the
// leader is given up after SyncLimit ticks, half the timeout (a tick of an
// eighth of it, between 100 ms and 2 s). Sessions from 2 ticks up to 2
// minutes are granted.
func TimingFor(session time.Duration) Timing {
	if session <= 0 {
		return DefaultTiming
	}
	tick := min(max(session/(2*syncTicks), minTick), maxTick).Truncate(time.Millisecond)
	return Timing{
		Tick:       tick,
		InitLimit:  max(10, int((initTime+tick-1)/tick)),
		SyncLimit:  syncTicks,
		MaxSession: max(maxSessionTime, 20*tick),
	}
}

// GiveUp is how long a leader and its followers go without hearing from
// each other before the leadership is given up.
func (t Timing) GiveUp() time.Duration { return time.Duration(t.SyncLimit) * t.Tick }

// lines are the zoo.cfg lines of the timing.
func (t Timing) lines() []string {
	l := []string{
		"tickTime=" + strconv.Itoa(int(t.Tick/time.Millisecond)),
		"initLimit=" + strconv.Itoa(t.InitLimit),
		"syncLimit=" + strconv.Itoa(t.SyncLimit),
	}
	if t.MaxSession > 0 {
		l = append(l, "maxSessionTimeout="+strconv.Itoa(int(t.MaxSession/time.Millisecond)))
	}
	return l
}

// Env is the timing as the zkbench/zookeeper image's environment
// (docker/zookeeper/zk-run).
func (t Timing) Env() map[string]string {
	env := map[string]string{
		"ZOO_TICK_TIME":  strconv.Itoa(int(t.Tick / time.Millisecond)),
		"ZOO_INIT_LIMIT": strconv.Itoa(t.InitLimit),
		"ZOO_SYNC_LIMIT": strconv.Itoa(t.SyncLimit),
	}
	if t.MaxSession > 0 {
		env["ZOO_MAX_SESSION_TIMEOUT"] = strconv.Itoa(int(t.MaxSession / time.Millisecond))
	}
	return env
}

// Timing is the cluster's timing; a state saved before the limits were
// recorded has ZooKeeper's defaults beside its tick.
func (s State) Timing() Timing {
	t := Timing{Tick: time.Duration(s.TickMs) * time.Millisecond, InitLimit: s.InitLimit, SyncLimit: s.SyncLimit,
		MaxSession: time.Duration(s.MaxSessionMs) * time.Millisecond}
	if t.InitLimit == 0 {
		t.InitLimit = DefaultTiming.InitLimit
	}
	if t.SyncLimit == 0 {
		t.SyncLimit = DefaultTiming.SyncLimit
	}
	return t
}
