package testcluster

import (
	"testing"
	"time"
)

// Widen runs run with window and, while run says the window held too
// little for the test's checks (a non-empty reason: too few grants, no
// write), again with a window three times as long, twice at most; then it
// fails tb with the last reason. A loaded machine can leave a short window
// a handful of operations, or none.
func Widen(tb testing.TB, window time.Duration, run func(window time.Duration) (short string)) {
	tb.Helper()
	for try := 0; ; try++ {
		short := run(window)
		if short == "" {
			return
		}
		if try == 2 {
			tb.Fatalf("%s with a %v window", short, window)
		}
		tb.Logf("%s with a %v window (a loaded machine): again with %v", short, window, 3*window)
		window *= 3
	}
}
