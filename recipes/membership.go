package recipes

import (
	"context"
	"slices"

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

// ChangeWatcher is an optional ability of a Group whose watch learns of
// each change by itself (the delta variants): WatchChanges follows the
// group as Watch does, but hands over the whole membership only when it
// lists the group and otherwise only what changed. Following a group of N
// members then costs its follower O(1) a change, where Watch's sorted
// copy of the view costs O(N log N): at 10,000 members that copy, not the
// watch, is what a follower would spend its time on.
type ChangeWatcher interface {
	// WatchChanges calls listed with the whole membership (in no order)
	// each time it lists the group (at the start, and again where a
	// reconnect may have hidden changes), and changed with the members
	// that joined and that left the view since its last report, once for
	// each notification that changed it: never both empty, and a member
	// is in at most one of them. Errors, ctx and the calling goroutine are
	// as for Watch.
	WatchChanges(ctx context.Context, listed func(members []string), changed func(joined, left []string)) error
}

// WatchWhole is Group.Watch made from w's changes: it keeps the view and
// calls seen with it, sorted, after the first listing and after every
// report that changed it.
func WatchWhole(ctx context.Context, w ChangeWatcher, seen func(members []string)) error {
	view := map[string]bool{}
	report := func() {
		names := make([]string, 0, len(view))
		for n := range view {
			names = append(names, n)
		}
		slices.Sort(names)
		seen(names)
	}
	return w.WatchChanges(ctx, func(members []string) {
		clear(view)
		for _, m := range members {
			view[m] = true
		}
		report()
	}, func(joined, left []string) {
		for _, m := range joined {
			view[m] = true
		}
		for _, m := range left {
			delete(view, m)
		}
		report()
	})
}
