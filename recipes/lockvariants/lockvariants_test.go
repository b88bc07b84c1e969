package lockvariants

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/native"
)

func TestLookup(t *testing.T) {
	want := []string{Fair, Naive, NaiveChildren, Native}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		v, err := Lookup(n)
		if err != nil || v.Name != n || v.New == nil {
			t.Errorf("Lookup(%q) = %+v, %v", n, v, err)
		}
	}
	if _, err := Lookup("herdless"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Lookup(unknown) error = %v, want ErrUnknown", err)
	}
	if v, _ := Lookup(Native); v.ClientCounts {
		t.Errorf("native claims client-side counts")
	}
}

// foreignSession is a session of no known backend: only its type matters,
// native.NewLock must refuse it before calling any method.
type foreignSession struct{ backends.Session }

// wrapped is a decorator over a foreign session, to check that native
// unwraps and still refuses.
type wrapped struct{ backends.Session }

func (w wrapped) Unwrap() backends.Session { return w.Session }

func TestNativeUnsupportedSurfaces(t *testing.T) {
	s := wrapped{foreignSession{}}
	v, _ := Lookup(Native)
	if _, err := v.New(s, "/zkbench/x/lock"); !errors.Is(err, native.ErrUnsupported) {
		t.Fatalf("New on a foreign session: %v, want native.ErrUnsupported", err)
	}
	l := v.Factory()(s, "/zkbench/x/lock")
	if _, err := l.Acquire(context.Background()); !errors.Is(err, native.ErrUnsupported) {
		t.Errorf("Acquire of a lock that failed to build: %v, want native.ErrUnsupported", err)
	}
	if err := l.Release(context.Background()); !errors.Is(err, recipes.ErrNotHeld) {
		t.Errorf("Release of a lock that failed to build: %v, want ErrNotHeld", err)
	}
	if len(Factories()) != len(Variants()) {
		t.Errorf("Factories and Variants differ in size")
	}
}
