package workloads

import (
	"context"
	"errors"
	"testing"

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
