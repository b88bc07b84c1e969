package backendtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
)

// testSet: Set creates a persistent node that outlives its session,
// overwrites it, and fires an armed ExistsW with a data change.
func testSet(t *testing.T, e *env) {
	writer, watcher, p := e.setConfig(t, "v1")
	ctx, _ := contextWithCancel(t)
	ch := existsW(t, ctx, watcher, p, true)
	set(t, writer, p, "v2")
	ev := nextEvent(t, ch, "ExistsW on Set")
	wantEvent(t, ev, backends.EventDataChanged, p)
	// etcd's watch event carries the value put; ZooKeeper's one-shot
	// notification carries none (backends.Event.Data).
	if want := "v2"; e.kind == backends.Etcd && string(ev.Data) != want {
		t.Errorf("etcd: ExistsW's event carries %q, want %q (the value put)", ev.Data, want)
	}
	if e.kind == backends.ZooKeeper && ev.Data != nil {
		t.Errorf("zookeeper: ExistsW's event carries %q, want nil (one-shot notifications carry no data)", ev.Data)
	}
	if data, _, err := watcher.Get(opCtx(t), p); err != nil || string(data) != "v2" {
		t.Fatalf("Get after Set = %q, %v; want v2", data, err)
	}
	writer.Close()
	if data, _, err := watcher.Get(opCtx(t), p); err != nil || string(data) != "v2" {
		t.Fatalf("Get after the writer's session closed = %q, %v; want v2 (Set makes a persistent node)", data, err)
	}
	del(t, watcher, p)
}

// setConfig opens a writer and a watcher session; the writer Sets the node
// config in the namespace, absent until then, to data, and the watcher
// waits until it sees it.
func (e *env) setConfig(t *testing.T, data string) (writer, watcher backends.Session, p string) {
	t.Helper()
	writer, watcher = e.session(t), e.session(t)
	ensure(t, writer, e.ns)
	p = e.p("config")
	if err := writer.Set(opCtx(t), p, []byte(data)); err != nil {
		t.Fatalf("Set(%s) of an absent node: %v", p, err)
	}
	visible(t, watcher, p)
	return writer, watcher, p
}

// testWatchData: a DataWatcher's stream delivers every change in order
// with its data, deletion and re-creation included, and stays armed (a
// burst of changes faster than a read may skip versions on ZooKeeper,
// never repeat or reorder them); a backend without the ability says so
// through the instrument.
func testWatchData(t *testing.T, e *env) {
	writer, watcher, p := e.setConfig(t, "v0")
	w := instrument.Wrap(watcher, &instrument.Counters{})
	ctx, cancel := contextWithCancel(t)
	data, exists, ch, err := w.WatchData(ctx, p)
	if _, ok := watcher.(backends.DataWatcher); !ok {
		if !errors.Is(err, backends.ErrNoDataWatch) {
			t.Fatalf("WatchData on a session without the ability: err = %v, want ErrNoDataWatch", err)
		}
		t.Logf("%s sessions have no persistent watch", e.kind)
		return
	}
	if err != nil || !exists || string(data) != "v0" {
		t.Fatalf("WatchData = %q, %v, %v; want v0, true, nil", data, exists, err)
	}
	// One change at a time: each is delivered with its data.
	for i := 1; i <= 5; i++ {
		set(t, writer, p, fmt.Sprintf("v%d", i))
		ev := nextEvent(t, ch, "WatchData")
		wantEvent(t, ev, backends.EventDataChanged, p)
		if want := fmt.Sprintf("v%d", i); string(ev.Data) != want {
			t.Fatalf("event %d carries %q, want %q (every change, in order)", i, ev.Data, want)
		}
	}
	// A burst: etcd's stream delivers every change; ZooKeeper's
	// notifications carry no data and the read after one returns the newest
	// version, so it may skip versions, but delivers them in order, never
	// twice, and ends with the last.
	const burst = 5
	for i := 1; i <= burst; i++ {
		set(t, writer, p, fmt.Sprintf("w%d", i))
	}
	events := 5
	for last := 0; last < burst; {
		ev := nextEvent(t, ch, "WatchData in a burst")
		wantEvent(t, ev, backends.EventDataChanged, p)
		events++
		var got int
		if _, err := fmt.Sscanf(string(ev.Data), "w%d", &got); err != nil || got <= last {
			t.Fatalf("burst event carries %q after w%d, want a later version (in order, never twice)", ev.Data, last)
		}
		if e.kind == backends.Etcd && got != last+1 {
			t.Fatalf("burst event carries %q after w%d, want every change", ev.Data, last)
		}
		last = got
	}
	del(t, writer, p)
	wantEvent(t, nextEvent(t, ch, "WatchData on delete"), backends.EventDeleted, p)
	set(t, writer, p, "again")
	ev := nextEvent(t, ch, "WatchData on re-create")
	wantEvent(t, ev, backends.EventCreated, p)
	if string(ev.Data) != "again" {
		t.Fatalf("re-create carries %q, want again", ev.Data)
	}
	quiet(t, ch, "WatchData with no change")
	c := w.Counters().Snapshot()
	if c.WatchEvents != int64(events+2) || c.WatchesArmed != 1 {
		t.Fatalf("instrument counted %d events and %d watches armed, want %d and 1", c.WatchEvents, c.WatchesArmed, events+2)
	}
	// The session ends: EventSessionLost, then the channel closes.
	watcher.Close()
	wantEvent(t, nextEvent(t, ch, "WatchData when the session ends"), backends.EventSessionLost, p)
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("WatchData sent an event after EventSessionLost")
		}
	case <-time.After(eventBound):
		t.Fatal("WatchData's channel not closed after EventSessionLost")
	}
	cancel()
	del(t, writer, p)
}
