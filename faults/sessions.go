package faults

import (
	"fmt"
	"sync"

	"github.com/zkbench/zkbench/results"
)

// Recorder receives timeline events; workloads.RunLog is one. client is
// the client the event is about, or results.NoClient.
type Recorder interface {
	Event(kind, what string, client int)
}

// SessionTimeline turns session state changes into timeline events (kind
// "session") naming the client whose session it was, and counts them by
// state. Feed it from ZKSessions (NewZKSessions(t.Observe)) and from the
// workload's lost-session reports.
//
// "connected" is counted but not recorded: every client connects once per
// case, and the timeline is for what faults did to them.
//
// Safe for concurrent use.
type SessionTimeline struct {
	rec Recorder

	mu     sync.Mutex
	client sessionClients
	counts map[SessionState]int64
}

// sessionClients maps session ids to client indexes.
type sessionClients map[int64]int

// reset maps ids[i] to client i, dropping earlier mappings; a zero id (a
// client without a session) maps nothing.
func (m sessionClients) reset(ids []int64) {
	clear(m)
	for i, id := range ids {
		if id != 0 {
			m[id] = i
		}
	}
}

// NewSessionTimeline records into rec (nil: count only).
func NewSessionTimeline(rec Recorder) *SessionTimeline {
	return &SessionTimeline{rec: rec, client: sessionClients{}, counts: map[SessionState]int64{}}
}

// SetSessions maps the session ids of the case now running to client
// indexes (ids[i] is client i's). Earlier mappings are dropped.
func (t *SessionTimeline) SetSessions(ids []int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.client.reset(ids)
}

// SetSession maps one session id to its client, as sessions open one by
// one.
func (t *SessionTimeline) SetSession(id int64, client int) {
	if client < 0 || id == 0 {
		return
	}
	t.mu.Lock()
	t.client[id] = client
	t.mu.Unlock()
}

// Observe records that session changed to state s.
func (t *SessionTimeline) Observe(session int64, s SessionState) {
	t.mu.Lock()
	t.counts[s]++
	c, ok := t.client[session]
	t.mu.Unlock()
	if s == SessionConnected || t.rec == nil {
		return
	}
	if !ok {
		t.rec.Event("session", fmt.Sprintf("%s (session 0x%x)", s, session), results.NoClient)
		return
	}
	t.rec.Event("session", string(s), c)
}

// ObserveClient records a state change of client c's session, for reports
// that know the client but not the session ("lost" from the workload).
func (t *SessionTimeline) ObserveClient(c int, s SessionState) {
	t.mu.Lock()
	t.counts[s]++
	t.mu.Unlock()
	if t.rec != nil && s != SessionConnected {
		t.rec.Event("session", string(s), c)
	}
}

// Counts returns how many changes of each state were seen.
func (t *SessionTimeline) Counts() map[SessionState]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[SessionState]int64, len(t.counts))
	for k, v := range t.counts {
		out[k] = v
	}
	return out
}
