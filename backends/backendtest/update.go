package backendtest

import (
	"context"
	"errors"
	"testing"

	"github.com/zkbench/zkbench/backends"
)

// testUpdate checks backends.Updater: another session's Update changes an
// ephemeral node's data, its watcher sees EventDataChanged, the node keeps
// its owner (it goes when the owner's session closes, not the writer's),
// and an Update of an absent node is ErrNoNode. The revocable lock
// (recipes/fair) is built on it.
func testUpdate(t *testing.T, e *env) {
	owner, writer := e.session(t), e.session(t)
	st, ok := writer.(backends.Updater)
	if !ok {
		t.Fatalf("%T does not implement backends.Updater", writer)
	}
	ensure(t, owner, e.ns)
	p := e.p("held")
	create(t, owner, p, []byte("mine"))
	visible(t, owner, p)

	ctx, _ := contextWithCancel(t)
	ch := existsW(t, ctx, owner, p, true)
	dataVersion(t, owner, p, 0)
	if err := st.Update(opCtx(t), p, []byte("unlock")); err != nil {
		t.Fatalf("Update(%s): %v", p, err)
	}
	wantEvent(t, nextEvent(t, ch, "ExistsW on Update"), backends.EventDataChanged, p)
	dataVersion(t, owner, p, 1)
	got, _, err := owner.Get(opCtx(t), p)
	if err != nil || string(got) != "unlock" {
		t.Fatalf("Get(%s) after Update = %q, %v; want \"unlock\"", p, got, err)
	}
	if err := st.Update(opCtx(t), e.p("absent"), []byte("x")); !errors.Is(err, backends.ErrNoNode) {
		t.Fatalf("Update of an absent node = %v, want ErrNoNode", err)
	}
	if err := writer.Close(); err != nil {
		t.Fatalf("closing the writer: %v", err)
	}
	visible(t, owner, p) // the writer's close leaves the node: it is not the writer's
	if err := owner.Close(); err != nil {
		t.Fatalf("closing the owner: %v", err)
	}
	gone(t, session(t, e.b), p, eventBound)
}

// dataVersion checks the Node.DataVersion that ExistsW reports for p.
func dataVersion(t *testing.T, s backends.Session, p string, want int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(opCtx(t))
	defer cancel()
	ok, n, _, err := s.ExistsW(ctx, p)
	if err != nil || !ok || n.DataVersion != want {
		t.Fatalf("ExistsW(%s) = %v, DataVersion %d, %v; want true, %d", p, ok, n.DataVersion, err, want)
	}
}
