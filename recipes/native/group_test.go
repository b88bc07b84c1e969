package native_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/native"
)

// TestDeltaGroupReportsChanges: on both backends a delta group's
// WatchChanges hands over the group whole once, then each join and leave
// alone (the members that changed, not the view), and a Leave of a member
// that is not in reports nothing.
func TestDeltaGroupReportsChanges(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		open := func() backends.Session {
			s, err := b.NewSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		p := testcluster.TestNamespace(t, b) + "/group"
		member, err := native.NewDeltaGroup(open(), p)
		if err != nil {
			t.Fatal(err)
		}
		if err := member.Join(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		watcher, err := native.NewDeltaGroup(open(), p)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var reports []string
		add := func(r string) {
			mu.Lock()
			reports = append(reports, r)
			mu.Unlock()
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- watcher.(recipes.ChangeWatcher).WatchChanges(wctx,
				func(m []string) { add("listed " + join(m)) },
				func(joined, left []string) { add("joined " + join(joined) + " left " + join(left)) })
		}()
		want := []string{"listed a"}
		wait := func(what string) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				got := slices.Clone(reports)
				mu.Unlock()
				if slices.Equal(got, want) {
					return
				}
				if len(got) > len(want) || time.Now().After(deadline) {
					t.Fatalf("%s: reports %q, want %q", what, got, want)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		wait("the start")
		steps := []struct {
			what   string
			change func() error
			report string
		}{
			{"b joins", func() error { return member.Join(ctx, "b") }, "joined b left -"},
			{"a leaves", func() error { return member.Leave(ctx, "a") }, "joined - left a"},
			{"a leaves again", func() error { return member.Leave(ctx, "a") }, ""},
			{"c joins", func() error { return member.Join(ctx, "c") }, "joined c left -"},
		}
		for _, st := range steps {
			if err := st.change(); err != nil {
				t.Fatalf("%s: %v", st.what, err)
			}
			if st.report != "" {
				want = append(want, st.report)
			}
			wait(st.what)
		}
		stop()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("WatchChanges still running after its ctx ended")
		}
	})
}

func join(m []string) string {
	if len(m) == 0 {
		return "-"
	}
	return strings.Join(slices.Sorted(slices.Values(m)), ",")
}
