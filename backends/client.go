package backends

import "context"

type clientKey struct{}

// WithClient returns ctx carrying the index of the simulated client a session
// is opened for. Workloads set it on the ctx they pass to NewSession;
// decorating Backends that act per client (fault injection routes a client
// through its own proxy and names it in the timeline) read it with ClientOf.
// Backends themselves ignore it.
func WithClient(ctx context.Context, client int) context.Context {
	return context.WithValue(ctx, clientKey{}, client)
}

// ClientOf returns the simulated client index ctx carries, if any.
func ClientOf(ctx context.Context) (int, bool) {
	c, ok := ctx.Value(clientKey{}).(int)
	return c, ok
}
