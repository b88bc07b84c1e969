package backendtest

import (
	"errors"
	"testing"

	"github.com/zkbench/zkbench/backends"
)

// testSet checks backends.Setter: another session's Set changes an
// ephemeral node's data, its watcher sees EventDataChanged, the node keeps
// its owner (it goes when the owner's session closes, not the writer's),
// and a Set of an absent node is ErrNoNode. The revocable lock
// (recipes/fair) is built on it.
func testSet(t *testing.T, e *env) {
	owner, writer := e.session(t), e.session(t)
	st, ok := writer.(backends.Setter)
	if !ok {
		t.Fatalf("%T does not implement backends.Setter", writer)
	}
	ensure(t, owner, e.ns)
	p := e.p("held")
	create(t, owner, p, []byte("mine"))
	visible(t, owner, p)

	ctx, _ := contextWithCancel(t)
	ch := existsW(t, ctx, owner, p, true)
	if err := st.Set(opCtx(t), p, []byte("unlock")); err != nil {
		t.Fatalf("Set(%s): %v", p, err)
	}
	wantEvent(t, nextEvent(t, ch, "ExistsW on Set"), backends.EventDataChanged, p)
	got, _, err := owner.Get(opCtx(t), p)
	if err != nil || string(got) != "unlock" {
		t.Fatalf("Get(%s) after Set = %q, %v; want \"unlock\"", p, got, err)
	}
	if err := st.Set(opCtx(t), e.p("absent"), []byte("x")); !errors.Is(err, backends.ErrNoNode) {
		t.Fatalf("Set of an absent node = %v, want ErrNoNode", err)
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
