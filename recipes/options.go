package recipes

import "time"

// DefaultCleanupTimeout bounds the fresh context on which an election or
// barrier recipe removes its own nodes after its caller's ctx ended.
const DefaultCleanupTimeout = 5 * time.Second

// Options tune the election and barrier recipes of every family (naive, fair,
// native). The zero value is not used directly: NewOptions fills defaults.
type Options struct {
	// CleanupTimeout bounds the fresh context on which a create runs to
	// completion and on which a cancelled call removes its own node.
	// Default DefaultCleanupTimeout.
	CleanupTimeout time.Duration
}

// Option configures an election or barrier recipe.
type Option func(*Options)

// WithCleanupTimeout sets Options.CleanupTimeout; non-positive values keep the
// default.
func WithCleanupTimeout(d time.Duration) Option {
	return func(o *Options) {
		if d > 0 {
			o.CleanupTimeout = d
		}
	}
}

// NewOptions applies opts over the defaults.
func NewOptions(opts ...Option) Options {
	o := Options{CleanupTimeout: DefaultCleanupTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
