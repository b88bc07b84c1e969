package recipe

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestOutlive: the context lives as long as ctx, past the timeout, and
// ends the timeout after ctx does with DeadlineExceeded; its cancel ends
// it with Canceled; a ctx already done gives the timeout from now.
//
// That it ends after ctx, not with it, is checked by when it ends: no
// sooner than the timeout after the cancel, a bound the timer keeps however
// late this goroutine runs (a check of Err right after the cancel would
// fail whenever the goroutine is descheduled for the 50 ms between them).
func TestOutlive(t *testing.T) {
	const timeout = 50 * time.Millisecond
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	octx, ocancel := Outlive(ctx, timeout)
	if octx.Value(key{}) != "v" {
		t.Fatal("ctx's values are not carried")
	}
	defer ocancel()
	select {
	case <-octx.Done():
		t.Fatalf("ended while ctx lives: %v", octx.Err())
	case <-time.After(3 * timeout):
	}
	cancelled := time.Now()
	cancel()
	select {
	case <-octx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("still alive long after ctx ended")
	}
	if after := time.Since(cancelled); after < timeout {
		t.Fatalf("ended %v after ctx, within its %v timeout: with ctx, not after it", after, timeout)
	}
	if err := octx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err() = %v, want DeadlineExceeded", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	octx2, ocancel2 := Outlive(ctx2, time.Hour)
	ocancel2()
	if err := octx2.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel, Err() = %v, want Canceled", err)
	}
	cancel2() // ctx ending after cancel starts no timer that fires later

	// An hour, so that the context is surely alive when checked; its
	// deadline is at least the timeout after the call.
	before := time.Now()
	octx3, ocancel3 := Outlive(ctx, time.Hour) // ctx is done
	defer ocancel3()
	if dl, ok := octx3.Deadline(); !ok || dl.Before(before.Add(time.Hour)) || octx3.Err() != nil {
		t.Fatalf("for a done ctx: deadline %v (%v), err %v; want a live context with a deadline an hour from the call", dl, ok, octx3.Err())
	}
}
