package testcluster

import (
	"os"
	"sync"
	"testing"
)

// exitMu guards exits, the stoppers of shared servers, run by Main.
var (
	exitMu sync.Mutex
	exits  []func()
)

// atExit registers f to run when Main's tests are done (last in, first out).
// Without Main, f never runs; servers die with the test binary anyway.
func atExit(f func()) {
	exitMu.Lock()
	exits = append(exits, f)
	exitMu.Unlock()
}

// Main runs m and then stops the shared servers the tests started and
// removes their folders, before exiting with m's code. Use it as
//
//	func TestMain(m *testing.M) { testcluster.Main(m) }
//
// It is optional: without it, the servers die with the test binary (their
// parent-death signal), and their folders are removed by the next test
// binary that starts one.
func Main(m *testing.M) {
	code := m.Run()
	exitMu.Lock()
	fs := exits
	exits = nil
	exitMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	os.Exit(code)
}
