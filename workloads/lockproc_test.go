package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

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

// RunLockWorker reports a spec it cannot use as an error line and returns
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
			open := func(context.Context, json.RawMessage) (backends.Session, func() error, error) {
				opened = true
				return nil, nil, errors.New("must not open")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := RunLockWorker(ctx, open, strings.NewReader(in), &out)
			if !errors.Is(err, ErrLockWorker) || opened {
				t.Errorf("err %v, opened %v: want ErrLockWorker before any open", err, opened)
			}
			if !strings.HasPrefix(out.String(), "0 error ") {
				t.Errorf("output %q: want an error line", out.String())
			}
		})
	}
}
