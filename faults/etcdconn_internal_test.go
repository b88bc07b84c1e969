package faults

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/connectivity"
)

// scriptedConn plays a connection's states: each WaitForStateChange moves
// to the next step, whose state GetState then reads (what a watcher that
// was scheduled late sees).
type scriptedConn struct {
	steps []connectivity.State
	at    int
}

func (c *scriptedConn) GetState() connectivity.State { return c.steps[c.at] }

func (c *scriptedConn) WaitForStateChange(ctx context.Context, source connectivity.State) bool {
	if c.at+1 >= len(c.steps) {
		return false
	}
	c.at++
	return true
}

// TestWatchConnStatesLateWatcher: the watcher learns of each change from
// WaitForStateChange, so a reset whose reconnect finished before the
// watcher read the state (Ready, then Ready again) is still one disconnect
// and one reconnect; slower paths give the same, and a connection that
// was never ready reports nothing until it is.
func TestWatchConnStatesLateWatcher(t *testing.T) {
	const (
		ready = connectivity.Ready
		idle  = connectivity.Idle
		conn  = connectivity.Connecting
		fail  = connectivity.TransientFailure
		shut  = connectivity.Shutdown
	)
	d, r := SessionDisconnected, SessionReconnected
	for _, tc := range []struct {
		name  string
		steps []connectivity.State
		want  []SessionState
	}{
		{"seen on the way", []connectivity.State{ready, idle, conn, ready}, []SessionState{d, r}},
		{"back before the watcher ran", []connectivity.State{ready, ready}, []SessionState{d, r}},
		{"two resets, both late", []connectivity.State{ready, ready, ready}, []SessionState{d, r, d, r}},
		{"down for a while", []connectivity.State{ready, fail, conn, fail, conn, ready}, []SessionState{d, r}},
		{"never ready, then ready", []connectivity.State{conn, ready, idle, ready}, []SessionState{d, r}},
		{"shut down while down", []connectivity.State{ready, idle, shut, ready}, []SessionState{d}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []SessionState
			armed := 0
			watchConnStates(context.Background(), &scriptedConn{steps: tc.steps}, func() { armed++ }, func(s SessionState) { got = append(got, s) })
			if armed != 1 {
				t.Errorf("armed %d times, want once", armed)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("states %v, want %v", got, tc.want)
			}
		})
	}
}
