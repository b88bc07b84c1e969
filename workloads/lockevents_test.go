package workloads

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// Every event a lock client or worker can send comes back from its line as
// it went in; an error comes back as its kind and text.
func TestLockEventRoundTrip(t *testing.T) {
	lost := backends.ErrSessionLost
	for _, ev := range []lockEvent{
		{Kind: evAsked, At: 5 * time.Millisecond, Intended: 4 * time.Millisecond},
		{Kind: evGranted, At: 7 * time.Millisecond, Token: 1 << 40, Wakeups: 3},
		{Kind: evFailed, At: 8 * time.Millisecond, Err: lost},
		{Kind: evWrite, At: 9 * time.Millisecond, Token: 12},
		{Kind: evLost, At: 10 * time.Millisecond},
		{Kind: evExit, At: 11 * time.Millisecond},
		{Kind: evReleased, At: 12 * time.Millisecond},
		{Kind: evReleaseFailed, At: 13 * time.Millisecond, Err: errors.New("two\nlines")},
		{Kind: evSession, Session: 0x7fff_0000_0001},
		{Kind: evSessionLost, At: time.Second},
		{Kind: evError, Err: errors.New("spec: bad")},
		{Kind: evStep, At: 14 * time.Millisecond, Op: "3.7", Step: 2, Token: 99, Outcome: stepReplayed},
		{Kind: evCommit, At: 15 * time.Millisecond, Op: "3.7", Token: 99, Recovered: true, Reqs: 11, Bytes: 600},
		{Kind: evAbort, At: 16 * time.Millisecond, Op: "3.8", Token: 99, Reqs: 3, Bytes: 90, Err: errors.New("rejected")},
	} {
		t.Run(ev.Kind.String(), func(t *testing.T) {
			for _, ack := range []bool{false, true} {
				line, err := encodeEvent(42, ev, ack)
				if err != nil {
					t.Fatal(err)
				}
				got, seq, gotAck, err := decodeEvent(line)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				if seq != 42 || gotAck != ack {
					t.Errorf("%s: seq %d ack %v, want 42 %v", line, seq, gotAck, ack)
				}
				if (got.Err == nil) != (ev.Err == nil) {
					t.Fatalf("%s: error %v, want %v", line, got.Err, ev.Err)
				}
				if ev.Err != nil {
					if got.Err.Error() != ev.Err.Error() || errorKind(got.Err) != errorKind(ev.Err) {
						t.Errorf("%s: error %q (%s), want %q (%s)", line, got.Err, errorKind(got.Err), ev.Err, errorKind(ev.Err))
					}
					if errorKind(ev.Err) != "other" && !errors.Is(got.Err, ev.Err) {
						t.Errorf("%s: error is not errors.Is %v", line, ev.Err)
					}
				}
				got.Err, ev.Err = nil, nil
				if got != ev {
					t.Errorf("%s: decoded %+v, want %+v", line, got, ev)
				}
			}
		})
	}
}

// A line that is not an event of a known kind is an error, never skipped.
func TestDecodeEventRefuses(t *testing.T) {
	for name, line := range map[string]string{
		"unknown kind":   `{"seq":3,"kind":"granted-twice","token":4}`,
		"numbered kind":  `{"seq":3,"kind":2}`,
		"no kind":        `{"seq":3,"token":4}`,
		"no seq":         `{"kind":"asked"}`,
		"not json":       `12 granted 4 0`,
		"truncated":      `{"seq":3,"kind":"asked"`,
		"empty kind":     `{"seq":3,"kind":""}`,
		"seq not number": `{"seq":"3","kind":"asked"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if ev, _, _, err := decodeEvent([]byte(line)); !errors.Is(err, errLockProtocol) {
				t.Errorf("%s: decoded %+v, err %v: want errLockProtocol", line, ev, err)
			}
		})
	}
	for _, k := range []lockEventKind{0, evAbort + 1, 255} {
		if line, err := encodeEvent(1, lockEvent{Kind: k}, false); !errors.Is(err, errLockProtocol) {
			t.Errorf("kind %d encoded as %s, err %v: want errLockProtocol", k, line, err)
		}
	}
}

func TestLockCommands(t *testing.T) {
	for _, c := range []lockCommand{{Cmd: cmdStart}, {Cmd: cmdAck, Seq: 7}} {
		line := encodeCommand(c)
		got, err := decodeCommand(line[:len(line)-1])
		if err != nil || got != c {
			t.Errorf("%s: decoded %+v, %v", line, got, err)
		}
	}
	for _, line := range []string{`{"cmd":"stop"}`, `{"cmd":"ack"}`, `{"cmd":"start","seq":2}`, `start`, `{}`} {
		if c, err := decodeCommand([]byte(line)); !errors.Is(err, errLockProtocol) {
			t.Errorf("%s: decoded %+v, err %v: want errLockProtocol", line, c, err)
		}
	}
}

// A worker's error reaches the parent as its kind; the parent must read it
// as the error it stands for, so that Ops and Errors count it the same.
func TestWorkerErrorKinds(t *testing.T) {
	for _, err := range []error{backends.ErrUnknownOutcome, backends.ErrSessionLost, recipes.ErrLockLost, recipes.ErrNotHeld,
		context.DeadlineExceeded, backends.ErrNoNode, backends.ErrNodeExists, errors.New("something else")} {
		kind := errorKind(err)
		got := &workerError{kind: kind, text: err.Error()}
		if errorKind(got) != kind {
			t.Errorf("%v: kind %q read back as %q", err, kind, errorKind(got))
		}
		if kind != "other" && !errors.Is(got, err) {
			t.Errorf("%v: the worker's %q error is not errors.Is the original", err, kind)
		}
	}
	if errors.Is(&workerError{kind: "other"}, backends.ErrUnknownOutcome) {
		t.Error("an 'other' error reads as an unknown outcome")
	}
}

// FuzzDecodeEvent: whatever a worker writes, decoding it either fails with
// errLockProtocol or gives an event of a known kind that encodes again.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{`{"seq":1,"kind":"granted","at_ns":5,"token":3}`, `{"seq":2,"kind":"failed","err_kind":"timeout","err":"x"}`, `{}`, `x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, seq, ack, err := decodeEvent(line)
		if err != nil {
			if !errors.Is(err, errLockProtocol) {
				t.Fatalf("%q: %v is not errLockProtocol", line, err)
			}
			return
		}
		if seq == 0 {
			t.Fatalf("%q: decoded without a sequence number", line)
		}
		if _, err := encodeEvent(seq, ev, ack); err != nil {
			t.Fatalf("%q: decoded %+v does not encode: %v", line, ev, err)
		}
	})
}
