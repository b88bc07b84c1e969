package faults_test

import (
	"context"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestWatchEtcdConn puts a proxy between an etcd session and the server and
// resets its connection: the watch reports the disconnect and, once the
// client is back, the reconnect; the session survives. Closing the session
// ends the watch. Through faults.Backend the changes reach the timeline
// under the session's client.
func TestWatchEtcdConn(t *testing.T) {
	u, err := url.Parse(testcluster.EtcdEndpoints(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	g, err := proxy.NewGroup(context.Background(), []string{u.Host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	eps := []string{"http://" + g.Addrs()[0]}

	var mu sync.Mutex
	var states []faults.SessionState
	tl := faults.NewSessionTimeline(nil)
	// A 10 s lease, not the scenarios' 2 s: the session must outlive the
	// reset and gRPC's redial, which a loaded machine can stretch past 2 s
	// since the last keep-alive.
	eb, err := openBackend("etcd", eps, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eb.Close() })
	b := faults.NewBackend(eb, nil, func(client int, id int64) { tl.SetSession(id, client) },
		faults.WithEtcdConnStates(func(id int64, s faults.SessionState) {
			mu.Lock()
			states = append(states, s)
			mu.Unlock()
			tl.Observe(id, s)
		}))
	s := newSession(t, b)
	got := func() []faults.SessionState {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(states)
	}
	// A second, direct watch on the same session, to see it end at Close.
	done := faults.WatchEtcdConn(s, func(faults.SessionState) {})
	if done == nil {
		t.Fatal("an etcd session was not watched")
	}

	if n := g.ResetAll(); n == 0 {
		t.Fatal("no connection to reset")
	}
	want := []faults.SessionState{faults.SessionDisconnected, faults.SessionReconnected}
	for deadline := time.Now().Add(15 * time.Second); !slices.Equal(got(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("states %v, want %v", got(), want)
		}
	}
	select {
	case <-s.Done():
		t.Fatal("the session did not survive a reset")
	default:
	}
	if c := tl.Counts(); c[faults.SessionDisconnected] != 1 || c[faults.SessionReconnected] != 1 {
		t.Errorf("timeline counts %v", c)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end when the session closed")
	}
	if n := len(got()); n != 2 {
		t.Errorf("closing the session reported %v", got()[2:])
	}
}
