package safety

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestRegisterUnfencedCountsLateWrites(t *testing.T) {
	r := NewRegister(false)
	r.Grant(5, 1)
	if !r.Write(5, 1) || !r.Write(5, 1) {
		t.Fatal("holder's writes rejected")
	}
	r.Grant(7, 2) // client 1 was paused; the lock passed to client 2
	if !r.Write(5, 1) {
		t.Fatal("unfenced register rejected a write")
	}
	if !r.Write(7, 2) || !r.Write(5, 1) {
		t.Fatal("unfenced register rejected a write")
	}
	s := r.Stats()
	if s != (FenceStats{Writes: 5, Accepted: 5, Prevented: 0, Violations: 2}) {
		t.Fatalf("stats %+v", s)
	}
	sf := r.Safety()
	if sf.Checked != 5 || sf.Violations != 2 || sf.Prevented != 0 || len(sf.Details) != 2 {
		t.Fatalf("safety %+v", sf)
	}
	if !strings.Contains(sf.Details[0], "granted to client 2 with token 7") || !strings.Contains(sf.Details[1], "client 2 wrote with token 7") {
		t.Fatalf("details %q", sf.Details)
	}
}

func TestRegisterFencedRejectsStaleWrites(t *testing.T) {
	r := NewRegister(true)
	r.Grant(5, 1)
	r.Write(5, 1)
	r.Grant(7, 2)
	r.Write(7, 2) // the new holder writes first thing
	if r.Write(5, 1) {
		t.Fatal("fenced register accepted a stale token")
	}
	if !r.Write(7, 2) || !r.Write(9, 3) {
		t.Fatal("fenced register rejected a current token")
	}
	if r.Write(7, 2) {
		t.Fatal("fenced register accepted token 7 after 9")
	}
	s := r.Stats()
	if s != (FenceStats{Writes: 6, Accepted: 4, Prevented: 2, Violations: 0}) {
		t.Fatalf("stats %+v", s)
	}
	if d := r.Safety().Details; len(d) != 2 || !strings.Contains(d[0], "rejected") {
		t.Fatalf("details %q", d)
	}
}

func TestRegisterFencedAcceptsStaleWriteBeforeNewHoldersFirst(t *testing.T) {
	// A fence only knows tokens that reached it: this is the gap the
	// workload closes by writing right after each grant.
	r := NewRegister(true)
	r.Write(5, 1)
	r.Grant(7, 2)
	if !r.Write(5, 1) {
		t.Fatal("fenced register rejected a write no newer token had fenced")
	}
	if s := r.Stats(); s.Violations != 1 || s.Prevented != 0 {
		t.Fatalf("stats %+v: the accepted stale write must count as a violation", s)
	}
}

func TestRegisterConcurrentHoldersUnderARealLock(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		r := NewRegister(fenced)
		var (
			mu    sync.Mutex
			token int64
			wg    sync.WaitGroup
		)
		for c := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					mu.Lock()
					token++
					r.Grant(token, c)
					r.Write(token, c)
					r.Write(token, c)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if s := r.Stats(); s != (FenceStats{Writes: 3200, Accepted: 3200}) {
			t.Fatalf("fenced=%v: stats %+v, want every write accepted and no finding", fenced, s)
		}
	}
}

func TestCheckerSequentialSectionsAreSafe(t *testing.T) {
	c := NewChecker()
	for i := range 5 {
		at := time.Duration(i) * 10 * ms
		if n := c.Enter(i, int64(100+i), at); n != 0 {
			t.Fatalf("enter %d saw %d inside", i, n)
		}
		if !c.Exit(i, at+5*ms) {
			t.Fatalf("exit %d: not inside", i)
		}
	}
	r := c.Report()
	if r.Entered != 5 || r.Violations != 0 || r.TokenRegressions != 0 || r.Unbalanced != 0 || len(r.Details) != 0 {
		t.Fatalf("report %+v", r)
	}
	if s := c.Safety(); s.Checked != 5 || s.Violations != 0 {
		t.Fatalf("safety %+v", s)
	}
}

func TestCheckerReportsOverlapWithTokens(t *testing.T) {
	c := NewChecker()
	c.Enter(1, 10, 0)                       // client 1 holds, then is paused past its session
	if n := c.Enter(2, 20, 30*ms); n != 1 { // the lock passes to client 2
		t.Fatalf("overlapping enter saw %d inside, want 1", n)
	}
	if got := c.Inside(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("inside %v", got)
	}
	c.Exit(1, 40*ms) // client 1 wakes up and leaves
	c.Exit(2, 50*ms)
	r := c.Report()
	if r.Violations != 1 || len(r.Overlaps) != 1 {
		t.Fatalf("report %+v", r)
	}
	o := r.Overlaps[0]
	want := Overlap{First: Section{1, 10, 0, 40 * ms}, Second: Section{2, 20, 30 * ms, 50 * ms}, At: 30 * ms}
	if o != want {
		t.Fatalf("overlap %+v, want %+v", o, want)
	}
	if !strings.Contains(r.Details[0], "client 2 was granted the lock with token 20 while client 1 held it with token 10") {
		t.Fatalf("details %q", r.Details)
	}
}

func TestCheckerTokenRegressionAndUnbalanced(t *testing.T) {
	c := NewChecker(WithMaxDetails(1))
	c.Enter(1, 10, 0)
	c.Exit(1, ms)
	c.Enter(2, 10, 2*ms) // token did not grow
	c.Enter(2, 11, 3*ms) // entered again without exit
	c.Exit(3, 4*ms)      // exit without enter
	r := c.Report()
	if r.TokenRegressions != 1 || r.Unbalanced != 2 || r.Violations != 0 || len(r.Details) != 1 {
		t.Fatalf("report %+v", r)
	}
	if s := c.Safety(); s.Violations != 1 {
		t.Fatalf("safety %+v: a token regression is a violation", s)
	}
}

func TestCheckerConcurrentClients(t *testing.T) {
	// Under a real mutex: no violation however the goroutines interleave.
	c := NewChecker()
	start := time.Now()
	var (
		mu    sync.Mutex
		token atomic.Int64
		wg    sync.WaitGroup
	)
	for client := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				mu.Lock()
				c.Enter(client, token.Add(1), time.Since(start))
				c.Exit(client, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if r := c.Report(); r.Entered != 16*300 || r.Violations != 0 || r.TokenRegressions != 0 || r.Unbalanced != 0 {
		t.Fatalf("report %+v", r)
	}

	// Without a lock, made to overlap for sure: every client enters, then
	// all wait for each other before leaving.
	c = NewChecker()
	var entered sync.WaitGroup
	entered.Add(4)
	for client := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Enter(client, 0, time.Since(start))
			entered.Done()
			entered.Wait()
			c.Exit(client, time.Since(start))
		}()
	}
	wg.Wait()
	// Enters found 0, 1, 2 and 3 others inside: 3 violating grants.
	if r := c.Report(); r.Violations != 3 || len(r.Overlaps) != 6 {
		t.Fatalf("report %+v, want 3 violations and 6 overlapping pairs", r)
	}
}

func TestOverlapsOffline(t *testing.T) {
	tests := []struct {
		name     string
		sections []Section
		want     [][2]int // client pairs (first, second)
	}{
		{"none", nil, nil},
		{"touching", []Section{{1, 1, 0, 10}, {2, 2, 10, 20}, {3, 3, 20, 30}}, nil},
		{"one overlap", []Section{{2, 2, 15, 25}, {1, 1, 0, 20}, {3, 3, 25, 30}}, [][2]int{{1, 2}}},
		{"open section", []Section{{1, 1, 0, -1}, {2, 2, 100, 110}, {3, 3, 200, 210}}, [][2]int{{1, 2}, {1, 3}}},
		{"same client twice", []Section{{1, 1, 0, 20}, {1, 2, 10, 30}}, nil},
		{"three at once", []Section{{1, 1, 0, 50}, {2, 2, 10, 50}, {3, 3, 20, 50}}, [][2]int{{1, 2}, {1, 3}, {2, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Overlaps(tt.sections)
			if len(got) != len(tt.want) {
				t.Fatalf("Overlaps = %+v, want pairs %v", got, tt.want)
			}
			for i, o := range got {
				if o.First.Client != tt.want[i][0] || o.Second.Client != tt.want[i][1] || o.At != o.Second.Start {
					t.Fatalf("overlap %d = %+v, want pair %v", i, o, tt.want[i])
				}
			}
		})
	}
}

func TestElectionChecker(t *testing.T) {
	e := NewElectionChecker()
	e.Elected(1, 100, 0)
	if !e.Act(1, 100, ms) {
		t.Fatal("sole leader's act flagged")
	}
	if e.Act(2, 0, 2*ms) {
		t.Fatal("act by a non-leader passed")
	}
	// Leader 1 is partitioned; 2 is elected before 1 notices.
	if n := e.Elected(2, 200, 10*ms); n != 1 {
		t.Fatalf("Elected saw %d leaders, want 1", n)
	}
	if e.Act(1, 100, 11*ms) || e.Act(2, 200, 12*ms) {
		t.Fatal("acts of two leaders at once passed")
	}
	e.Deposed(1, 13*ms)
	if !e.Act(2, 200, 14*ms) {
		t.Fatal("sole leader's act flagged after the old one stepped down")
	}
	r := e.Report()
	if r.Terms.Entered != 2 || r.Terms.Violations != 1 || r.Acts != 5 || r.ConcurrentActs != 2 || r.ActsWithoutTerm != 1 {
		t.Fatalf("report %s", r)
	}
	if s := e.Safety(); s.Checked != 2 || s.Violations != 4 || !strings.Contains(strings.Join(s.Details, "\n"), "granted the leadership") {
		t.Fatalf("safety %+v", s)
	}
}

func BenchmarkCheckerEnterExit(b *testing.B) {
	c := NewChecker()
	var tok int64
	b.ReportAllocs()
	for b.Loop() {
		tok++
		c.Enter(1, tok, time.Duration(tok))
		c.Exit(1, time.Duration(tok))
	}
}

func BenchmarkRegisterWrite(b *testing.B) {
	r := NewRegister(true)
	var tok int64
	b.ReportAllocs()
	for b.Loop() {
		tok++
		r.Write(tok, 1)
	}
}

// TestRWChecker: readers share, a writer with anyone and a reader with a
// writer are violations, readers at once are measured, and a reader queued
// behind a waiting writer (a larger token) granted first overtook it.
func TestRWChecker(t *testing.T) {
	c := NewRWChecker()
	if e := c.Enter(1, false, c.Ask(), 10, 1); e.Readers != 1 {
		t.Fatalf("first reader sees %d readers, want 1", e.Readers)
	}
	w := c.Ask()                                                // a writer asks, queued with token 20
	if e := c.Enter(2, false, c.Ask(), 30, 2); e.Readers != 2 { // a reader queued behind it
		t.Fatalf("second reader sees %d readers, want 2", e.Readers)
	}
	if r := c.Report(); r.Violations != 0 || r.MaxReaders != 2 || r.MeanReaders != 1.5 {
		t.Fatalf("two readers: %+v", r)
	}
	if e := c.Enter(3, true, w, 20, 3); e.Overtaken != 1 { // a writer while two read
		t.Fatalf("writer overtaken by %d readers, want 1 (token 30, not 10)", e.Overtaken)
	}
	if r := c.Report(); r.Violations != 1 || r.Overtaken != 1 {
		t.Fatalf("writer among readers: %+v, want 1 violation and 1 overtaking", r)
	}
	c.Exit(1, 4)
	c.Exit(2, 4)
	c.Enter(4, false, c.Ask(), 40, 5) // a reader while the writer holds
	if r := c.Report(); r.Violations != 2 || r.ReaderGrants != 3 {
		t.Fatalf("reader with a writer: %+v, want 2 violations and 3 reader grants", r)
	}
	c.Exit(3, 6)
	c.Exit(4, 6)
	if e := c.Enter(5, true, c.Ask(), 50, 7); e.Overtaken != 0 {
		t.Fatalf("a writer asking after every reader overtaken by %d", e.Overtaken)
	}
	if c.Safety().Violations != 2 {
		t.Fatalf("a lone writer added a violation: %+v", c.Safety())
	}
	if c.Exit(9, 8) {
		t.Fatalf("Exit of a client that never entered reported it inside")
	}
}
