package etcd_test

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// SetIf writes every node in one transaction when the guard holds what
// the caller read (absent, then a value), and nothing when it does not;
// its nodes are persistent (no lease), as Set's are.
func TestSetIf(t *testing.T) {
	b, ns := open(t)
	s := session(t, b)
	ctx := ctxFor(t, 10*time.Second)
	head, a, c := ns+"/head", ns+"/a", ns+"/c"
	writes := func(h, v string) []backends.Write {
		return []backends.Write{{Path: a, Data: []byte(v)}, {Path: c, Data: []byte(v)}, {Path: head, Data: []byte(h)}}
	}
	if ok, err := s.SetIf(ctx, head, nil, writes("1", "x")); err != nil || !ok {
		t.Fatalf("SetIf on an absent guard = %v, %v; want true", ok, err)
	}
	// The guard is no longer absent: a caller that read it absent loses.
	if ok, err := s.SetIf(ctx, head, nil, writes("1", "y")); err != nil || ok {
		t.Fatalf("SetIf with a stale absent guard = %v, %v; want false", ok, err)
	}
	if ok, err := s.SetIf(ctx, head, []byte("0"), writes("2", "y")); err != nil || ok {
		t.Fatalf("SetIf with a stale value = %v, %v; want false", ok, err)
	}
	for _, p := range []string{a, c} {
		if got, _, err := s.Get(ctx, p); err != nil || string(got) != "x" {
			t.Fatalf("%s = %q, %v after refused writes; want x", p, got, err)
		}
	}
	if ok, err := s.SetIf(ctx, head, []byte("1"), writes("2", "z")); err != nil || !ok {
		t.Fatalf("SetIf with the value read = %v, %v; want true", ok, err)
	}
	// Persistent: another session's close leaves them.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	other := session(t, b)
	for p, want := range map[string]string{a: "z", c: "z", head: "2"} {
		if got, _, err := other.Get(ctx, p); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v after the writer's session closed; want %q", p, got, err, want)
		}
	}
}
