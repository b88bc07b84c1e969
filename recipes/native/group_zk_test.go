package native_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/native"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// TestZooKeeperDeltaGroupAcrossReconnect: a ZooKeeper delta group's view
// follows joins and leaves, and after its connection is dropped while
// members changed (ZooKeeper does not replay those changes to a persistent
// watch) it lists the group again and keeps following it.
func TestZooKeeperDeltaGroupAcrossReconnect(t *testing.T) {
	ep := testcluster.ZooKeeperEndpoints(t)
	px, err := proxy.New(context.Background(), ep[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	open := func(endpoints []string) backends.Session {
		b, err := zookeeper.New(zookeeper.Config{Endpoints: endpoints, SessionTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		s, err := b.NewSession(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ws, ms := open([]string{px.Addr()}), open(ep)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := testcluster.TestNamespace(t, testcluster.ZooKeeperBackend(t)) + "/group"
	watcher, err := native.NewDeltaGroup(ws, p)
	if err != nil {
		t.Fatal(err)
	}
	member, err := native.NewDeltaGroup(ms, p)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var view []string
	views := 0
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- watcher.Watch(wctx, func(v []string) {
			mu.Lock()
			view, views = v, views+1
			mu.Unlock()
		})
	}()
	becomes := func(what string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			got, n := slices.Clone(view), views
			mu.Unlock()
			if n > 0 && slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: view %v, want %v", what, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	becomes("the start")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(member.Join(ctx, "a"))
	becomes("a joins", "a")
	// Hold the watcher's traffic while b joins and a leaves, then drop
	// its connection with their notifications.
	px.Cut()
	must(member.Join(ctx, "b"))
	must(member.Leave(ctx, "a"))
	if px.ResetAll() == 0 {
		t.Fatal("no connection to drop")
	}
	px.Restore()
	becomes("changes made while the watcher was away", "b")
	must(member.Join(ctx, "c"))
	becomes("c joins after the reconnect", "b", "c")
	must(member.Leave(ctx, "b"))
	becomes("b leaves", "c")
	stop()
	select {
	case err := <-done:
		if ctx.Err() != nil || err == nil {
			t.Fatalf("Watch returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch still running after its ctx ended")
	}
	if d := watcher.(recipes.GroupCounter).Delivered(); d.Events != 3 || d.RecursiveDeletes != 1 {
		t.Errorf("%d notifications received, %d of them deletions: want 3 (a's join, c's join, b's leave: the two changes made while away are not replayed), 1 a deletion",
			d.Events, d.RecursiveDeletes)
	}
	must(member.Leave(ctx, "c"))
}
