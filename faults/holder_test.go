package faults_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/spawn"
	"github.com/zkbench/zkbench/recipes/variants"
)

// holderCommand makes the test binary a lock holder in its own process, so
// that a test can stop it with SIGSTOP as a long GC pause or a frozen VM
// would: its session's heartbeats stop with it.
const holderCommand = "__faults-holder"

// holderMain acquires the lock and then, every tick, writes (prints "write
// <token>") and only afterwards checks whether the lock was lost: a holder
// that wakes from a pause acts before it learns anything, which is the late
// write fencing exists for. Closing stdin releases the lock and exits.
//
// A "stop" line on stdin makes it stop itself (SIGSTOP) just before its next
// write (holder.stopBeforeWrite).
//
// Output lines: "session <id>", "granted <token>", "write <token>",
// "stopping <unix nanoseconds>", "lost", "released", "error <text>".
func holderMain(args []string) int {
	fs := flag.NewFlagSet(holderCommand, flag.ContinueOnError)
	kind := fs.String("backend", "", "zookeeper or etcd")
	endpoints := fs.String("endpoints", "", "comma-separated")
	timeout := fs.Duration("timeout", sessionTimeout, "session timeout / lease TTL")
	path := fs.String("path", "", "lock path")
	variant := fs.String("variant", variants.Fair, "lock variant")
	tick := fs.Duration("tick", 20*time.Millisecond, "write interval")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Printf("error %v\n", err)
		return 1
	}
	b, err := openBackend(backends.Kind(*kind), strings.Split(*endpoints, ","), *timeout, nil)
	if err != nil {
		return fail(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := b.NewSession(ctx)
	if err != nil {
		return fail(err)
	}
	fmt.Printf("session %d\n", s.ID())
	v, err := variants.Locks().Lookup(*variant)
	if err != nil {
		return fail(err)
	}
	l, err := v.New(s, *path)
	if err != nil {
		return fail(err)
	}
	g, err := l.Acquire(ctx)
	if err != nil {
		return fail(err)
	}
	fmt.Printf("granted %d\n", g.Token)
	stops, stdinClosed := make(chan struct{}), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "stop" {
				stops <- struct{}{}
			}
		}
		close(stdinClosed)
	}()
	t := time.NewTicker(*tick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-stops:
			// Freeze here, between two writes, and write first when
			// continued: a stop sent from outside may land between a
			// write and the check that follows it, and on etcd the
			// session's own expiry timer may then report the loss before
			// the next write (holder.stopBeforeWrite).
			//
			// The signal goes to this thread (tgkill), not the process:
			// a process's SIGSTOP is taken by whichever thread the kernel
			// picks, and this one runs on until it next enters the
			// kernel, which on a loaded machine was the write below: it
			// froze with its write made and its check not, and woke to a
			// loss its expiry timer had already reported (CI saw no late
			// write). A signal to this thread stops it before tgkill
			// returns.
			stopThisThread(func() { fmt.Printf("stopping %d\n", time.Now().UnixNano()) })
		case <-stdinClosed:
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := l.Release(rctx)
			rcancel()
			if err != nil {
				return fail(err)
			}
			fmt.Println("released")
			return 0
		}
		fmt.Printf("write %d\n", g.Token)
		select {
		case <-g.Lost:
			fmt.Println("lost")
			return 0
		default:
		}
	}
}

// stopThisThread runs before (the line that says so) and then stops the
// process with a SIGSTOP sent to the calling thread (tgkill), which stops
// before tgkill returns: nothing the caller does next runs before SIGCONT.
// TestSelfStopHoldsTheNextLine checks it, beside a process-directed stop.
func stopThisThread(before func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before()
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}

// selfStopCommand makes the test binary stop itself once, the holder's way
// ("thread") or with kill(getpid(), SIGSTOP) ("process"), printing
// "stopping" before and "after" once it runs again.
const selfStopCommand = "__faults-selfstop"

func selfStopMain(args []string) int {
	// Busy threads, as a holder's session keeps (its keep-alives and
	// watches): what a process-directed signal may be delivered to.
	for range 4 {
		go func() {
			for {
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	stopping := func() { fmt.Println("stopping") }
	switch {
	case len(args) == 1 && args[0] == "thread":
		stopThisThread(stopping)
	case len(args) == 1 && args[0] == "process":
		stopping()
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	default:
		fmt.Fprintf(os.Stderr, "%s: want thread or process, got %q\n", selfStopCommand, args)
		return 2
	}
	fmt.Println("after")
	return 0
}

// holderEvent is one line from a holder, stamped when it arrived.
type holderEvent struct {
	kind  string
	value int64
	at    time.Time
}

// holder is a lock holder process seen from the test.
type holder struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan holderEvent
	exited chan struct{}

	mu    sync.Mutex
	lines []holderEvent // every line but the writes before the last stop
}

// startHolder starts a holder on c's lock at path. Every line it prints is
// passed to onEvent (on one goroutine, in order, as it arrives) and then
// queued for next.
func startHolder(t *testing.T, c *cluster, path, variant string, onEvent func(holderEvent)) *holder {
	t.Helper()
	return startHolderTimeout(t, c, path, variant, sessionTimeout, onEvent)
}

// startHolderTimeout is startHolder with a session timeout (lease TTL) of
// timeout.
func startHolderTimeout(t *testing.T, c *cluster, path, variant string, timeout time.Duration, onEvent func(holderEvent)) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], holderCommand,
		"-backend", string(c.kind), "-endpoints", joinEndpoints(c.endpoints),
		"-timeout", timeout.String(), "-path", path, "-variant", variant)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := spawn.Start(cmd); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin, events: make(chan holderEvent, 1<<14), exited: make(chan struct{})}
	go func() {
		defer close(h.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			kind, val, _ := strings.Cut(sc.Text(), " ")
			ev := holderEvent{kind: kind, at: time.Now()}
			if kind == "error" {
				ev.kind = "error: " + val
			} else if val != "" {
				ev.value, _ = strconv.ParseInt(val, 10, 64)
			}
			if onEvent != nil {
				onEvent(ev)
			}
			h.record(ev)
			select {
			case h.events <- ev:
			default: // nobody is reading writes; keep the reader going
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		_ = stdin.Close()
		select {
		case <-h.exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-h.exited
		}
	})
	return h
}

// next returns the next event of kind, skipping others, or fails t.
func (h *holder) next(t *testing.T, kind string, within time.Duration) holderEvent {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	is := func(ev holderEvent) bool {
		if strings.HasPrefix(ev.kind, "error") {
			t.Fatalf("holder: %s", ev.kind)
		}
		return ev.kind == kind
	}
	for {
		select {
		case ev := <-h.events:
			if is(ev) {
				return ev
			}
		case <-h.exited:
			// The events it printed before exiting are all queued by now:
			// read them before saying it ended without one.
			select {
			case ev := <-h.events:
				if is(ev) {
					return ev
				}
				continue
			default:
			}
			t.Fatalf("holder exited before %q; it printed %s", kind, h.printed())
		case <-timer.C:
			t.Fatalf("holder: no %q within %v; it printed %s", kind, within, h.printed())
		}
	}
}

// record keeps ev for printed: a run of writes is kept as its first and
// last line, and a stop forgets the writes before it.
func (h *holder) record(ev holderEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ev.kind == "stopping" {
		h.lines = slices.DeleteFunc(h.lines, func(e holderEvent) bool { return e.kind == "write" })
	}
	if n := len(h.lines); ev.kind == "write" && n >= 2 && h.lines[n-1].kind == "write" && h.lines[n-2].kind == "write" {
		h.lines[n-1] = ev
		return
	}
	h.lines = append(h.lines, ev)
}

// printed describes the holder's lines as record kept them, with their
// arrival times, for a failure message.
func (h *holder) printed() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for i, ev := range h.lines {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d at %s", ev.kind, ev.value, ev.at.Format("15:04:05.000"))
	}
	return "[" + b.String() + "]"
}

// drain forgets queued events (the writes of a running holder).
func (h *holder) drain() {
	for {
		select {
		case <-h.events:
		default:
			return
		}
	}
}

// stopBeforeWrite freezes the holder with SIGSTOP, sent by the holder to
// itself just before a write, so that its first act when continued is a
// write, before it can learn that its session is gone. It returns the time
// by the holder's clock (this host's) at which it stopped, not when its
// line arrived, which a loaded machine can delay.
func (h *holder) stopBeforeWrite(t *testing.T) time.Time {
	t.Helper()
	if _, err := io.WriteString(h.stdin, "stop\n"); err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, h.next(t, "stopping", 20*time.Second).value)
}

func (h *holder) pause(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(h.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

func (h *holder) resume(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(h.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

func (h *holder) kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-h.exited
}

// release closes the holder's stdin: it releases the lock and exits.
func (h *holder) release(t *testing.T) {
	t.Helper()
	_ = h.stdin.Close()
	h.next(t, "released", 15*time.Second)
}
