package measure

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// doneSession is a session whose only behaviour is ending.
type doneSession struct {
	backends.Session
	done chan struct{}
}

func (s *doneSession) Done() <-chan struct{} { return s.done }
func (s *doneSession) Close() error          { return nil }

// TestWatchLossesAcrossChunks: sessions that end before Close are counted
// once each, with their client index, whichever of watchLosses' goroutines
// watches them (first and last of a chunk, and a chunk's only session);
// ends after Close are not losses, and Close waits for the watchers.
func TestWatchLossesAcrossChunks(t *testing.T) {
	n := 2*lossChunk + 1
	c := &Clients{closing: make(chan struct{})}
	ss := make([]*doneSession, n)
	for i := range ss {
		ss[i] = &doneSession{done: make(chan struct{})}
		c.Sessions = append(c.Sessions, ss[i])
	}
	var mu sync.Mutex
	var got []int
	c.watchLosses(func(kind, what string, client int) {
		if kind != "session" || what != "lost" {
			t.Errorf("event %s %s, want session lost", kind, what)
		}
		mu.Lock()
		got = append(got, client)
		mu.Unlock()
	})
	want := []int{0, lossChunk - 1, lossChunk, n - 1}
	for _, i := range want {
		close(ss[i].done)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Lost() < int64(len(want)) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	close(ss[1].done) // after Close: not a loss
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(got)
	if !slices.Equal(got, want) || c.Lost() != int64(len(want)) || len(c.LostAt()) != len(want) {
		t.Fatalf("lost clients %v (Lost %d, %d times), want %v", got, c.Lost(), len(c.LostAt()), want)
	}
}
