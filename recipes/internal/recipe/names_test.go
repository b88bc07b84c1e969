package recipe

import (
	"slices"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// A shared lock's node names put the mode before the lock's tag, so every
// writer's name starts with WriterPrefix; the lock still finds its own
// nodes of either mode, and of no mode, and no other lock's.
func TestSharedLockNames(t *testing.T) {
	q := &Queue{Prefix: SeqPrefix + "abc-"}
	other := &Queue{Prefix: SeqPrefix + "xyz-"}
	read, write := q.NameFor(Kind(recipes.Read)), q.NameFor(Kind(recipes.Write))
	if read != "lock-read-abc-" || write != "lock-write-abc-" || q.NameFor("") != q.Prefix {
		t.Fatalf("NameFor: read %q, write %q, none %q", read, write, q.NameFor(""))
	}
	if ModeOf(read+"0001") != recipes.Read || ModeOf(write+"0002") != recipes.Write || ModeOf("foreign") != recipes.Write {
		t.Errorf("ModeOf: %v %v %v, want read write write", ModeOf(read+"0001"), ModeOf(write+"0002"), ModeOf("foreign"))
	}
	if !strings.HasPrefix(write, WriterPrefix) || strings.HasPrefix(read, WriterPrefix) {
		t.Errorf("WriterPrefix %q: want it to start %q and not %q", WriterPrefix, write, read)
	}
	var kids []backends.Node
	for _, name := range []string{read + "1", write + "2", q.Prefix + "3", other.NameFor(Kind(recipes.Write)) + "4",
		other.NameFor(Kind(recipes.Read)) + "5", other.Prefix + "6", "foreign-7"} {
		kids = append(kids, backends.Node{Name: name, Path: "/p/" + name})
	}
	got := Own(kids, q.Prefix, read+"1")
	want := []string{"/p/" + write + "2", "/p/" + q.Prefix + "3"}
	if !slices.Equal(got, want) {
		t.Errorf("Own = %v, want %v", got, want)
	}
	if all := Own(kids, "", ""); len(all) != len(kids) {
		t.Errorf("Own with no prefix took %d of %d", len(all), len(kids))
	}
}
