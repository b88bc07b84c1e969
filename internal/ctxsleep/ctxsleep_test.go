package ctxsleep

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Now()
	if !Sleep(ctx, 20*time.Millisecond) || time.Since(t0) < 20*time.Millisecond {
		t.Fatalf("Sleep 20ms on a live context: false or returned after %v", time.Since(t0))
	}
	if !Sleep(ctx, 0) || !Sleep(ctx, -time.Second) {
		t.Fatal("Sleep 0 on a live context is false")
	}
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	t0 = time.Now()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep an hour is true although its context was cancelled")
	}
	if d := time.Since(t0); d > time.Minute {
		t.Fatalf("Sleep returned %v after the cancel", d)
	}
	if Sleep(ctx, 0) {
		t.Fatal("Sleep 0 on a cancelled context is true")
	}
}
