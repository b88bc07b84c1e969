package etcd

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func muxSession() *Session {
	ctx, cancel := context.WithCancel(context.Background())
	return &Session{ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// TestKeepAliveMux: over more sessions than one goroutine takes, every
// response after a session's first is timed, a closed channel marks its
// session lost and only it, and the goroutines end with their sessions.
func TestKeepAliveMux(t *testing.T) {
	var mu sync.Mutex
	timed := 0
	m := &keepAliveMux{rec: func(interval, late time.Duration) {
		if interval != 10*time.Second {
			t.Errorf("interval %v, want TTL/3 = 10s", interval)
		}
		mu.Lock()
		timed++
		mu.Unlock()
	}}
	before := runtime.NumGoroutine()
	n := 2*keepAliveChunk + 3
	sessions := make([]*Session, n)
	chans := make([]chan *clientv3.LeaseKeepAliveResponse, n)
	for i := range sessions {
		sessions[i], chans[i] = muxSession(), make(chan *clientv3.LeaseKeepAliveResponse, 1)
		m.watch(sessions[i], chans[i])
	}
	for range 2 {
		for _, ch := range chans {
			ch <- &clientv3.LeaseKeepAliveResponse{TTL: 30}
		}
	}
	waitFor(t, "every second response timed", func() bool { mu.Lock(); defer mu.Unlock(); return timed >= n })
	close(chans[keepAliveChunk])
	select {
	case <-sessions[keepAliveChunk].Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a closed keep-alive channel did not mark its session lost")
	}
	for i, s := range sessions {
		if i != keepAliveChunk && ended(s) {
			t.Fatalf("session %d ended with another's channel", i)
		}
	}
	for i, ch := range chans {
		if i != keepAliveChunk {
			close(ch)
		}
	}
	waitFor(t, "every session lost and the mux's goroutines gone", func() bool {
		for _, s := range sessions {
			if !ended(s) {
				return false
			}
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.chunks) == 0 && runtime.NumGoroutine() <= before
	})
	mu.Lock()
	defer mu.Unlock()
	if timed != n {
		t.Fatalf("%d responses timed, want %d (one a session: its first has nothing to be timed against)", timed, n)
	}
}

func ended(s *Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
