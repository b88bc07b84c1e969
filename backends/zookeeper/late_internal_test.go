package zookeeper

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// watchChan stands in for the channel go-zookeeper gives one watch: room
// for one event, then closed.
func watchChan() chan zk.Event { return make(chan zk.Event, 1) }

func fire(ch chan zk.Event, typ zk.EventType) {
	ch <- zk.Event{Type: typ}
	close(ch)
}

func TestLateWatchesCountsFiredOnly(t *testing.T) {
	var w lateWatches
	a, b, c, d := watchChan(), watchChan(), watchChan(), watchChan()
	w.abandon(watchKey{"/a", dataTable}, a)
	w.abandon(watchKey{"/b", dataTable}, b)
	w.abandon(watchKey{"/c", childTable}, c)
	w.abandon(watchKey{"/d", dataTable}, d)
	if got := w.count(); got != 0 {
		t.Fatalf("count before anything fired = %d", got)
	}
	fire(a, zk.EventNodeCreated)
	fire(c, zk.EventNodeChildrenChanged)
	fire(d, zk.EventNotWatching) // the session ended: not a notification
	if got := w.count(); got != 2 {
		t.Fatalf("count = %d, want 2", got)
	}
	if got := w.pending.Load(); got != 1 {
		t.Fatalf("pending = %d, want 1 (b)", got)
	}
	// A watch that already fired when abandoned is counted at once.
	e := watchChan()
	fire(e, zk.EventNodeDeleted)
	w.abandon(watchKey{"/e", dataTable}, e)
	if got := w.count(); got != 3 {
		t.Fatalf("count = %d, want 3", got)
	}
	// Close: what fired is counted, the rest dropped, nothing after.
	fire(b, zk.EventNodeDataChanged)
	w.close()
	late := watchChan()
	w.abandon(watchKey{"/late", dataTable}, late)
	fire(late, zk.EventNodeCreated)
	if got, p := w.count(), w.pending.Load(); got != 4 || p != 0 {
		t.Fatalf("after close: count %d pending %d, want 4 and 0", got, p)
	}
}

func TestLateWatchesShadowedByNewWatch(t *testing.T) {
	var w lateWatches
	k := watchKey{"/n", dataTable}
	old1, old2, fired := watchChan(), watchChan(), watchChan()
	w.abandon(k, old1)
	w.abandon(k, fired)
	fire(fired, zk.EventNodeCreated)
	w.abandon(watchKey{"/n", childTable}, old2) // another table: not shadowed
	// A new watch on k: old1 shares its server watcher and is dropped;
	// fired was an earlier notification and counts.
	w.arm(k)
	fire(old1, zk.EventNodeDeleted)
	if got := w.count(); got != 1 {
		t.Fatalf("count = %d, want 1", got)
	}
	if got := w.pending.Load(); got != 1 {
		t.Fatalf("pending = %d, want 1 (the child-table watch)", got)
	}
	// Abandoning another watch on a key shadows the unfired ones there too.
	again := watchChan()
	w.abandon(watchKey{"/n", childTable}, again)
	fire(old2, zk.EventNodeChildrenChanged)
	fire(again, zk.EventNodeChildrenChanged)
	if got := w.count(); got != 2 {
		t.Fatalf("count = %d, want 2 (one notification for the two child watches)", got)
	}
}

func TestLateWatchesBounded(t *testing.T) {
	var w lateWatches
	var chans []chan zk.Event
	for i := range maxLateWatches + 100 {
		ch := watchChan()
		chans = append(chans, ch)
		w.abandon(watchKey{string(rune('a'+i%26)) + "/" + string(rune(i)), dataTable}, ch)
	}
	if got := w.pending.Load(); got != maxLateWatches {
		t.Fatalf("pending = %d, want the bound %d", got, maxLateWatches)
	}
	// Once some fired, the next abandon sweeps them out and makes room.
	for _, ch := range chans[:500] {
		fire(ch, zk.EventNodeCreated)
	}
	w.abandon(watchKey{"/more", dataTable}, watchChan())
	if got, p := w.fired.Load(), w.pending.Load(); got != 500 || p != maxLateWatches-500+1 {
		t.Fatalf("after a sweep: fired %d pending %d, want 500 and %d", got, p, maxLateWatches-500+1)
	}
}

func TestWatchHandoff(t *testing.T) {
	ch := watchChan()
	var h watchHandoff
	if !h.delivered(ch) || h.gaveUp() != (<-chan zk.Event)(ch) {
		t.Fatal("delivered first: the caller who then gives up must get the channel")
	}
	var h2 watchHandoff
	if h2.gaveUp() != nil || h2.delivered(ch) {
		t.Fatal("gave up first: the request goroutine must abandon the channel itself")
	}
}
