package safety

import (
	"testing"
	"time"
)

// TestSemaphoreChecker: up to K holders pass; a grant that makes K+1 is a
// violation online and a crowd in the history; a release that touches the
// next grant does not overlap it.
func TestSemaphoreChecker(t *testing.T) {
	at := func(n int) time.Duration { return time.Duration(n) * ms }
	c := NewSemaphoreChecker(2)
	c.Enter(1, 1, at(0))
	c.Enter(2, 2, at(1))
	c.Exit(1, at(5))
	if n := c.Enter(3, 3, at(5)); n != 2 {
		t.Errorf("holders at a grant right after a release: %d, want 2", n)
	}
	if r := c.Report(); r.Violations != 0 || r.MostAtOnce != 2 || r.Crowded != 0 || r.MaxHolders != 2 {
		t.Fatalf("two at once: %+v", r)
	}
	if n := c.Enter(4, 4, at(6)); n != 3 {
		t.Errorf("holders: %d, want 3", n)
	}
	c.Exit(2, at(7))
	c.Exit(3, at(8))
	c.Exit(4, at(9))
	r := c.Report()
	if r.Violations != 1 || r.MostAtOnce != 3 || r.Crowded != 1 || len(r.Crowds) != 1 || r.Crowds[0].At != at(6) {
		t.Fatalf("three at once: %+v", r)
	}
	if s := c.Safety(); s.Violations != 1 || s.Checked != 4 || len(s.Details) != 1 {
		t.Errorf("safety %+v", s)
	}
	if r.Unbalanced != 0 || len(c.History()) != 4 {
		t.Errorf("unbalanced %d, history %v", r.Unbalanced, c.History())
	}
}

// TestCrowdedFromHistory: the offline sweep alone finds a crowd the online
// count never saw (sections reported afterwards), open sections included.
func TestCrowdedFromHistory(t *testing.T) {
	at := func(n int) time.Duration { return time.Duration(n) * ms }
	hist := []Section{
		{Client: 1, Start: at(0), End: at(10)},
		{Client: 2, Start: at(2), End: -1},
		{Client: 3, Start: at(10), End: at(12)},
		{Client: 4, Start: at(11), End: at(13)},
	}
	if most, n, crowds := Crowded(hist, 2, 5); most != 3 || n != 1 || len(crowds) != 1 || len(crowds[0].Holders) != 3 {
		t.Errorf("Crowded = %d, %d, %v", most, n, crowds)
	}
	if most, n, _ := Crowded(hist, 3, 5); most != 3 || n != 0 {
		t.Errorf("Crowded with 3 permits = %d, %d", most, n)
	}
}
