package runner

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/workloads/measure"
)

// syncBuffer is a bytes.Buffer safe for the status loop and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStatusLine(t *testing.T) {
	live := &measure.Live{}
	c := &caseStatus{live: live, began: time.Now(), warmup: time.Second, bounds: 6 * time.Second, ops: 100}
	c.lastAt = c.began
	if got := c.line(c.began.Add(300 * time.Millisecond)); !strings.Contains(got, "opening sessions") || strings.Contains(got, "/s") {
		t.Errorf("before the workers start: %q", got)
	}
	live.Start()
	started, _ := live.Started()
	for range 40 {
		live.Op()
	}
	c.lost.Add(2)
	got := c.line(started.Add(2 * time.Second))
	for _, want := range []string{"2s of 6s", "40 ops of 100", "/s", "2 sessions lost"} {
		if !strings.Contains(got, want) {
			t.Errorf("line %q lacks %q", got, want)
		}
	}
	if got := c.line(started.Add(500 * time.Millisecond)); !strings.Contains(got, "(warm-up)") {
		t.Errorf("in the warm-up: %q", got)
	}
}

// TestStatusTerminal checks that on a terminal the status line is drawn in
// place and cleared before a progress line, so lines never mix.
func TestStatusTerminal(t *testing.T) {
	var out syncBuffer
	s := newLiveStatus(&out, true)
	live := &measure.Live{}
	live.Start()
	s.beginCase(live, 0, time.Second, 0)
	// The status loop draws every liveRedraw; wait for its first line.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "sessions lost"); time.Sleep(liveRedraw / 5) {
		if time.Now().After(deadline) {
			t.Fatalf("no status line drawn within 10s: %q", out.String())
		}
	}
	s.println("a progress line")
	s.endCase()
	s.stop()
	got := out.String()
	i := strings.Index(got, "a progress line")
	if !strings.Contains(got, "sessions lost") || i < 0 || !strings.HasSuffix(got[:i], "\r\033[K") {
		t.Errorf("terminal output %q: want a status line cleared before the progress line", got)
	}
}
