package recipes

import (
	"context"

	"github.com/zkbench/zkbench/backends"
)

// Group is one client's part in group membership (the recipes page's group
// membership; Curator's GroupMember, kazoo's Party): a member is an
// ephemeral node <path>/<id>, so a member whose session ends leaves the
// group by itself, and every client may keep a view of who is in it.
// Join and Leave may be called concurrently with Watch, not with each
// other.
type Group interface {
	// Join adds id (a name without '/') to the group; an error wrapping
	// backends.ErrNodeExists if it is in already.
	Join(ctx context.Context, id string) error
	// Leave removes id; nil if it is not in.
	Leave(ctx context.Context, id string) error
	// Watch keeps this client's view of the group current until ctx ends
	// (ctx's error) or the session is lost (an error wrapping
	// backends.ErrSessionLost): it calls seen with the whole membership,
	// sorted, once at the start and after every change it learns of, from
	// Watch's own goroutine. seen must not block for long.
	Watch(ctx context.Context, seen func(members []string)) error
}

// GroupFactory makes one client's Group at path. An error matching
// ErrUnsupported if the variant cannot run on s's backend.
type GroupFactory func(s backends.Session, path string) (Group, error)

// GroupCounter is an optional ability of a Group whose watch bypasses
// backends/instrument (the native delta variant): it counts what its watch
// delivered itself. Safe to call concurrently with Watch.
type GroupCounter interface {
	// Delivered returns what the watch delivered so far.
	Delivered() Delivered
}

// Delivered is what a GroupCounter's watch delivered.
type Delivered struct {
	// Events are the watch events, Bytes their payload (keys and values).
	Events, Bytes int64
	// RecursiveDeletes are those of Events that told of a deletion through
	// a ZooKeeper persistent-recursive watch, which ZooKeeper before 3.9.0
	// counts twice (backends.Witness.RecursiveDeleteEvents).
	RecursiveDeletes int64
}
