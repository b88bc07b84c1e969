package recipetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// groupWatchers is how many clients keep a view in the membership suite.
const groupWatchers = 3

// RunGroupSuite runs the group membership subtest for variant v on backend
// b. On a backend the variant does not support, making it must fail with
// an error matching recipes.ErrUnsupported. Otherwise three clients keep
// views while two members join, one leaves and the other's session ends:
// every view follows the true membership, a second Join of a member fails
// with backends.ErrNodeExists, a variant that counts its own deliveries
// (recipes.GroupCounter) delivered exactly the four changes to each
// watcher, and Watch returns promptly once its ctx ends.
func RunGroupSuite(t *testing.T, b backends.Backend, v variants.Variant[recipes.GroupFactory]) {
	admin, _ := b.(backends.Admin)
	e := newEnv(t, b, admin, "group")
	ms := e.newMembers("p", groupWatchers+2)
	if !v.Supports(b.Kind()) {
		_, err := v.New(ms[0].s, e.path)
		if !errors.Is(err, recipes.ErrUnsupported) {
			t.Fatalf("%s on %s: err = %v, want one matching recipes.ErrUnsupported", v.Name, b.Kind(), err)
		}
		t.Logf("%s on %s refused: %v", v.Name, b.Kind(), err)
		return
	}
	groups := make([]recipes.Group, len(ms))
	for i, m := range ms {
		g, err := v.New(m.s, e.path)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		groups[i] = g
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	views := make([]*groupView, groupWatchers)
	wctx, stop := context.WithCancel(ctx)
	for i := range views {
		views[i] = &groupView{done: make(chan error, 1)}
		go func() { views[i].done <- groups[i].Watch(wctx, views[i].set) }()
	}
	for i, view := range views { // every watcher has read the (empty) group
		view.becomes(t, i, "the start", []string{})
	}
	// A variant that counts its own deliveries is past the instrument: the
	// servers' count of what they sent is checked against it.
	var srv *serverCounts
	var sent0 int64
	if _, ok := groups[0].(recipes.GroupCounter); ok {
		srv = newServerCounts(t, b)
		sent0 = srv.notified()
	}
	a, bm := groups[groupWatchers], groups[groupWatchers+1]
	steps := []struct {
		what string
		do   func() error
		want []string
	}{
		{"a joins", func() error { return a.Join(ctx, "a") }, []string{"a"}},
		{"b joins", func() error { return bm.Join(ctx, "b") }, []string{"a", "b"}},
		{"a leaves", func() error { return a.Leave(ctx, "a") }, []string{"b"}},
		{"b's session ends", func() error { return ms[groupWatchers+1].raw.Close() }, []string{}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if st.what == "b joins" {
			if err := bm.Join(ctx, "b"); !errors.Is(err, backends.ErrNodeExists) {
				t.Errorf("second Join of b: %v, want ErrNodeExists", err)
			}
		}
		for i, view := range views {
			view.becomes(t, i, st.what, st.want)
		}
	}
	var all recipes.Delivered
	for i := range views {
		if c, ok := groups[i].(recipes.GroupCounter); ok {
			d := c.Delivered()
			if d.Events != 4 {
				t.Errorf("watcher %d: %d changes delivered, want 4", i, d.Events)
			}
			all.Events += d.Events
			all.RecursiveDeletes += d.RecursiveDeletes
		}
	}
	if srv != nil {
		serverAgrees(t, srv, sent0, b.Kind(), all)
	}
	stop()
	for i, view := range views {
		select {
		case err := <-view.done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("watcher %d: Watch returned %v after its ctx ended, want context.Canceled", i, err)
			}
		case <-time.After(promptBound):
			t.Fatalf("watcher %d: Watch still running %v after its ctx ended", i, promptBound)
		}
	}
}

// serverAgrees checks the servers' count of the notifications they sent
// since sent0 against what the groups delivered, with the cross-check a
// run makes (figures.WatchEventsCheck): equal, or apart by a documented
// cause whose model predicts the difference (on ZooKeeper 3.8 a deletion
// through a recursive watch is counted twice: 12 delivered, 18 counted).
func serverAgrees(t *testing.T, srv *serverCounts, sent0 int64, kind backends.Kind, d recipes.Delivered) {
	t.Helper()
	srv.atLeast(sent0, d.Events)
	sent := srv.since(sent0)
	w := &backends.Witness{RecursiveDeleteEvents: d.RecursiveDeletes}
	if kind == backends.Etcd {
		w.WireWatchEvents, w.WatchStreams = d.Events, groupWatchers
	}
	note := figures.WatchEventsCheck.Note(kind, figures.Totals{WatchEvents: d.Events, Witness: w},
		backends.Metrics{backends.MetricWatchEvents: float64(sent)})
	t.Logf("delivered %d (%d deletions through recursive watches), servers sent %d; %s", d.Events, d.RecursiveDeletes, sent, note)
	if strings.Contains(note, "UNEXPLAINED") || (note == "" && sent != d.Events) {
		t.Errorf("the servers count %d notifications, the groups delivered %d: %s", sent, d.Events, note)
	}
}

// groupView is one watcher's latest view.
type groupView struct {
	mu      sync.Mutex
	members []string
	done    chan error
}

func (g *groupView) set(members []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members = slices.Clone(members)
}

// becomes waits until the view is want.
func (g *groupView) becomes(t *testing.T, i int, after string, want []string) {
	t.Helper()
	deadline := time.Now().Add(settleBound)
	for {
		g.mu.Lock()
		got := slices.Clone(g.members)
		g.mu.Unlock()
		if slices.Equal(got, want) && got != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watcher %d after %s: view [%s], want [%s]", i, after, strings.Join(got, " "), strings.Join(want, " "))
		}
		time.Sleep(pollEvery)
	}
}
