package workloads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// RunLockWorker reports a spec it cannot use as an error event and returns
// an error, without opening anything.
func TestRunLockWorkerBadSpec(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        "{\n",
		"unknown variant": `{"variant":"nope","path":"/zkbench/x/lock"}` + "\n",
		"no spec":         "",
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			opened := false
			open := func(context.Context, json.RawMessage) (backends.Backend, func() error, error) {
				opened = true
				return nil, nil, errors.New("must not open")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := RunLockWorker(ctx, open, strings.NewReader(in), &out)
			if !errors.Is(err, ErrLockWorker) || opened {
				t.Errorf("err %v, opened %v: want ErrLockWorker before any open", err, opened)
			}
			ev, seq, _, derr := decodeEvent(bytes.TrimSpace(out.Bytes()))
			if derr != nil || seq != 1 || ev.Kind != evError || ev.Err == nil || ev.At != 0 {
				t.Errorf("output %q (%+v, %v): want one error event", out.String(), ev, derr)
			}
		})
	}
}

// workerPipe runs RunLockWorker on the shared etcd as the parent would,
// with the test as the parent.
type workerPipe struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Scanner
	lines  chan []byte
	done   chan error
	expect uint64 // the next sequence number
}

func startWorkerPipe(t *testing.T, spec LockWorkerSpec) *workerPipe {
	t.Helper()
	b := testcluster.EtcdBackend(t)
	if spec.Path == "" {
		spec.Path = testcluster.TestNamespace(t, b) + "/lock"
	}
	open := func(context.Context, json.RawMessage) (backends.Backend, func() error, error) {
		return b, nil, nil
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &workerPipe{t: t, in: inW, lines: make(chan []byte, 100), done: make(chan error, 1), expect: 1}
	go func() {
		err := RunLockWorker(context.Background(), open, inR, outW)
		_ = outW.Close()
		w.done <- err
	}()
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			w.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		for range w.lines {
		}
	})
	line, _ := json.Marshal(spec)
	w.send(append(line, '\n'))
	return w
}

func (w *workerPipe) send(line []byte) {
	w.t.Helper()
	if _, err := w.in.Write(line); err != nil {
		w.t.Fatal(err)
	}
}

// next decodes the worker's next event, which must come within d.
func (w *workerPipe) next(d time.Duration) (lockEvent, bool) {
	w.t.Helper()
	select {
	case line, ok := <-w.lines:
		if !ok {
			w.t.Fatalf("the worker's output ended; want event %d", w.expect)
		}
		ev, seq, ack, err := decodeEvent(line)
		if err != nil || seq != w.expect {
			w.t.Fatalf("%s: %v; want event %d", line, err, w.expect)
		}
		w.expect++
		return ev, ack
	case <-time.After(d):
		w.t.Fatalf("no event %d within %v", w.expect, d)
	}
	panic("unreachable")
}

// The worker runs the lock client loop and says what it does in order; it
// sends its release request only once its exit is acknowledged, and says
// so with released. Its stdin's EOF stops it.
func TestRunLockWorkerProtocol(t *testing.T) {
	w := startWorkerPipe(t, LockWorkerSpec{Variant: "fair", Hold: 20 * time.Millisecond})
	if ev, _ := w.next(10 * time.Second); ev.Kind != evSession || ev.Session == 0 {
		t.Fatalf("first event %+v, want the session", ev)
	}
	w.send(encodeCommand(lockCommand{Cmd: cmdStart}))
	var token int64
	for i, want := range []lockEventKind{evAsked, evGranted, evWrite, evWrite, evExit} {
		ev, ack := w.next(10 * time.Second)
		if ev.Kind != want || ack != (want == evExit) {
			t.Fatalf("event %d: %+v ack %v, want %s (ack only on exit)", i, ev, ack, want)
		}
		switch ev.Kind {
		case evGranted:
			token = ev.Token
			if token == 0 {
				t.Fatalf("granted without a token: %+v", ev)
			}
		case evWrite:
			if ev.Token != token {
				t.Fatalf("write with token %d, granted %d", ev.Token, token)
			}
		}
	}
	// Not acknowledged: it waits, holding the lock's node, and says nothing.
	select {
	case line := <-w.lines:
		t.Fatalf("%s before the exit was acknowledged", line)
	case <-time.After(300 * time.Millisecond):
	}
	w.send(encodeCommand(lockCommand{Cmd: cmdAck, Seq: w.expect - 1}))
	released, _ := w.next(10 * time.Second)
	if released.Kind != evReleased {
		t.Fatalf("after the ack: %+v, want released", released)
	}
	// Every event carries the worker's counts so far: by its release, the
	// fair lock's enqueue, its register writes' and its release's calls.
	if r := released.Report; r == nil || r.Counts.Requests["enqueue"] != 1 || r.Counts.TotalRequests() < 3 || r.Counts.Requests["dequeue"] != 1 {
		t.Fatalf("released with report %+v: want the worker's counts, one enqueue and one dequeue among them", r)
	}
	if ev, _ := w.next(10 * time.Second); ev.Kind != evAsked {
		t.Fatalf("after released: %+v, want the next ask", ev)
	}
	// EOF: it stops asking, and leaves the lock free.
	_ = w.in.Close()
	var last lockEvent
	for line := range w.lines {
		ev, seq, _, err := decodeEvent(line)
		if err != nil || seq != w.expect {
			t.Fatalf("%s: %v; want event %d", line, err, w.expect)
		}
		w.expect++
		last = ev
	}
	if last.Kind != evFailed && last.Kind != evReleased {
		t.Fatalf("last event after EOF %+v: want the ask withdrawn or the lock released", last)
	}
	select {
	case err := <-w.done:
		if err != nil {
			t.Fatalf("worker: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop at EOF")
	}
}

// A command the worker does not know is an error event, before the start
// as after it, and it stops.
func TestRunLockWorkerBadCommand(t *testing.T) {
	for _, started := range []bool{false, true} {
		t.Run(map[bool]string{false: "before start", true: "after start"}[started], func(t *testing.T) {
			w := startWorkerPipe(t, LockWorkerSpec{Variant: "fair", Hold: time.Hour})
			if ev, _ := w.next(10 * time.Second); ev.Kind != evSession {
				t.Fatalf("first event %+v, want the session", ev)
			}
			if started {
				w.send(encodeCommand(lockCommand{Cmd: cmdStart}))
				for _, want := range []lockEventKind{evAsked, evGranted, evWrite} {
					if ev, _ := w.next(10 * time.Second); ev.Kind != want {
						t.Fatalf("%+v, want %s", ev, want)
					}
				}
			}
			w.send([]byte(`{"cmd":"pause"}` + "\n"))
			if ev, _ := w.next(5 * time.Second); ev.Kind != evError || !strings.Contains(ev.Err.Error(), "pause") {
				t.Fatalf("%+v: want an error event naming the command", ev)
			}
			if started {
				// It stops holding at once, and releases.
				for _, want := range []lockEventKind{evWrite, evExit, evReleased} {
					if ev, _ := w.next(10 * time.Second); ev.Kind != want {
						t.Fatalf("%+v, want %s", ev, want)
					}
				}
			}
			select {
			case err := <-w.done:
				if !errors.Is(err, ErrLockWorker) {
					t.Fatalf("worker returned %v, want ErrLockWorker", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the worker went on after a bad command")
			}
		})
	}
}

func TestReadAcks(t *testing.T) {
	ack := func(seq uint64) string { return string(encodeCommand(lockCommand{Cmd: cmdAck, Seq: seq})) }
	for name, tc := range map[string]struct {
		in   string
		want error
	}{
		"acks then EOF":    {ack(4) + "\n", nil},
		"two pending":      {ack(4) + ack(9), errLockProtocol},
		"start again":      {string(encodeCommand(lockCommand{Cmd: cmdStart})), errLockProtocol},
		"unknown":          {`{"cmd":"pause"}` + "\n", errLockProtocol},
		"last line, no \n": {strings.TrimSpace(ack(4)), nil},
	} {
		t.Run(name, func(t *testing.T) {
			acks := make(chan uint64, 1)
			err := readAcks(bufio.NewReader(strings.NewReader(tc.in)), acks)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want == nil {
				if got := <-acks; got != 4 {
					t.Errorf("ack %d, want 4", got)
				}
			}
		})
	}
}
