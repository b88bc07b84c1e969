package coord

import (
	"context"

	"github.com/zkbench/zkbench/backends"
)

// Woke says how a Wait ended without error.
type Woke int

// Wait outcomes.
const (
	// Recheck: a watch channel closed without an event while ctx was alive
	// (the backend dropped the watch). Nothing was consumed; the caller
	// re-reads its state, which is always safe in these recipes.
	Recheck Woke = iota
	// First: the first channel delivered a notification.
	First
	// Second: the second channel delivered a notification.
	Second
)

// Wait blocks until the one-shot watch first (or second, which may be nil)
// delivers a notification, the session ends (backends.ErrSessionLost, also
// when a watch reports EventSessionLost) or ctx is done (ctx's error). A
// notification is one wake-up consumed.
func Wait(ctx context.Context, s backends.Session, first, second <-chan backends.Event) (Woke, error) {
	var (
		ev backends.Event
		ok bool
		w  Woke
	)
	select {
	case ev, ok = <-first:
		w = First
	case ev, ok = <-second:
		w = Second
	case <-s.Done():
		return Recheck, backends.ErrSessionLost
	case <-ctx.Done():
		return Recheck, ctx.Err()
	}
	switch {
	case ok && ev.Type == backends.EventSessionLost:
		return Recheck, backends.ErrSessionLost
	case ok:
		return w, nil
	case ctx.Err() != nil:
		return Recheck, ctx.Err()
	case Closed(s.Done()):
		return Recheck, backends.ErrSessionLost
	}
	return Recheck, nil
}
