package zookeeper_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
)

// TestSharedConnsHideTheHerd shows why sharing connections is only an
// experiment: four sessions on two connections watch one node, all four
// are told of its deletion, but the server triggers only two watches.
func TestSharedConnsHideTheHerd(t *testing.T) {
	direct := open(t, zookeeper.Config{})
	owner := newSession(t, direct)
	ns := namespace(t, direct, owner)
	ctx := ctxT(t)
	target := ns + "/target"
	if _, err := owner.Create(ctx, target, nil); err != nil {
		t.Fatal(err)
	}
	b := open(t, zookeeper.Config{Conns: 2})
	ids := map[int64]int{}
	var chans []<-chan backends.Event
	for i := 0; i < 4; i++ {
		s := newSession(t, b)
		ids[s.ID()]++
		_, _, ch, err := s.ExistsW(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	if len(ids) != 2 {
		t.Fatalf("4 sessions over 2 connections have %d session ids: %v", len(ids), ids)
	}
	before := scrape(t, direct)
	if err := owner.Delete(ctx, target); err != nil {
		t.Fatal(err)
	}
	for _, ch := range chans {
		select {
		case ev := <-ch:
			if ev.Type != backends.EventDeleted {
				t.Fatalf("event %v", ev.Type)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a sharing session was not told")
		}
	}
	d := settled(t, direct, before, backends.MetricWatchesTriggeredOnDelete, 2)
	if got := d[backends.MetricWatchesTriggeredOnDelete]; got != 2 {
		t.Errorf("server triggered %v watches for 4 watching sessions, want 2 (one per connection)", got)
	}
}

// TestSharedViewCloseDeletesItsNodes: closing a view removes the ephemeral
// nodes it made and leaves the connection's other views working.
func TestSharedViewCloseDeletesItsNodes(t *testing.T) {
	b := open(t, zookeeper.Config{Conns: 1})
	a := newSession(t, b)
	other := newSession(t, b)
	if a.ID() != other.ID() {
		t.Fatalf("one connection, two ids: %x %x", a.ID(), other.ID())
	}
	ns := namespace(t, b, other)
	ctx := ctxT(t)
	if _, err := a.Create(ctx, ns+"/a", nil); err != nil {
		t.Fatal(err)
	}
	n, err := a.CreateSequential(ctx, ns, "q-", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, ns+"/other", nil); err != nil {
		t.Fatal(err)
	}
	a.Close()
	waitClosed(t, a.Done(), time.Second, "closed view's Done")
	for _, p := range []string{ns + "/a", n.Path} {
		if _, _, err := other.Get(ctx, p); !errors.Is(err, backends.ErrNoNode) {
			t.Errorf("%s after its view closed: %v, want ErrNoNode", p, err)
		}
	}
	if _, _, err := other.Get(ctx, ns+"/other"); err != nil {
		t.Errorf("the other view's node: %v", err)
	}
	select {
	case <-other.Done():
		t.Fatal("closing one view ended the other")
	default:
	}
	if _, err := a.Create(ctx, ns+"/again", nil); !errors.Is(err, backends.ErrSessionLost) {
		t.Errorf("closed view: %v, want ErrSessionLost", err)
	}
}
