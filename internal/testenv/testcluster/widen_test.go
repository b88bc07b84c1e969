package testcluster

import (
	"slices"
	"testing"
	"time"
)

// TestWidenTriplesTheWindow: a run that reports too little is repeated with
// a window three times as long, and Widen returns at the first that does not.
func TestWidenTriplesTheWindow(t *testing.T) {
	var windows []time.Duration
	Widen(t, time.Second, func(w time.Duration) string {
		windows = append(windows, w)
		if len(windows) < 3 {
			return "too few grants"
		}
		return ""
	})
	if want := []time.Duration{time.Second, 3 * time.Second, 9 * time.Second}; !slices.Equal(windows, want) {
		t.Fatalf("windows %v, want %v", windows, want)
	}
}
