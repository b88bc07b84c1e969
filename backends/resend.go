package backends

import "context"

type noResendKey struct{}

// NoResend returns ctx marked so that a sequential create on it
// (Session.CreateSequential) whose reply was lost is never sent again: the
// backend looks for the node the lost try may have made, as always, and
// where it finds none returns an error matching ErrUnknownOutcome instead
// of creating again.
//
// Without the mark a backend that finds no node creates again. That is
// right for a node only its own session removes (a lock's waiter): not
// found, it was not made. It is wrong for a node other sessions may
// remove as soon as it exists, a queue's item: a consumer can take the
// item between the lost reply and the look, and a second create would put
// it twice.
func NoResend(ctx context.Context) context.Context {
	return context.WithValue(ctx, noResendKey{}, true)
}

// Resends reports whether a create of unknown outcome may be sent again
// on ctx (see NoResend).
func Resends(ctx context.Context) bool { return ctx.Value(noResendKey{}) == nil }
