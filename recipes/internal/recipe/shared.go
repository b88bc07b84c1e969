package recipe

import (
	"strings"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// The shared (read/write) locks of recipes/naive and recipes/fair queue on
// a Queue made by NewQueue and name each node for its mode, before the
// lock's tag: "lock-read-<tag>-..." or "lock-write-<tag>-..." (Kind,
// Queue.NameFor), so that one listing shows who waits for what and which
// nodes are a lock's own, whatever mode they were made in, and the writers
// share one name prefix (WriterPrefix) that a bounded query can ask for.

// Kind is the part of a shared lock's node name that says its mode.
func Kind(m recipes.Mode) string { return m.String() + "-" }

// ModeOf returns the mode a shared lock's node was made in, from its name.
// A name that says neither (no shared lock made it) counts as a writer:
// whatever it is, nobody behind it may take it for a reader.
func ModeOf(name string) recipes.Mode {
	if strings.HasPrefix(name, SeqPrefix+Kind(recipes.Read)) {
		return recipes.Read
	}
	return recipes.Write
}

// WriterPrefix starts the name of every shared lock's writer node.
var WriterPrefix = SeqPrefix + Kind(recipes.Write)

// Standing is where a shared lock's waiter stands in a listing.
type Standing int

// Standings.
const (
	// Gone: the waiter's node is not in the listing.
	Gone Standing = iota
	// Holds: nothing before the node keeps it waiting.
	Holds
	// Behind: the node waits behind Blocking's node.
	Behind
)

// Blocking says whether the node named me, waiting in mode, holds the
// lock in children (a listing in queue order) and, if not, which node it
// waits behind: for a writer, the node just before its own (any mode);
// for a reader, the nearest writer before its own (readers before it do
// not keep it out). This is the ZooKeeper recipes page's shared lock.
func Blocking(children []backends.Node, me string, mode recipes.Mode) (backends.Node, Standing) {
	i := IndexOf(children, me)
	switch {
	case i < 0:
		return backends.Node{}, Gone
	case mode == recipes.Write:
		if i == 0 {
			return backends.Node{}, Holds
		}
		return children[i-1], Behind
	}
	for j := i - 1; j >= 0; j-- {
		if ModeOf(children[j].Name) == recipes.Write {
			return children[j], Behind
		}
	}
	return backends.Node{}, Holds
}

// Holders returns the nodes of children (a shared lock's listing in queue
// order) that hold the lock: the first node if it is a writer, else every
// reader before the first writer.
func Holders(children []backends.Node) []backends.Node {
	if len(children) == 0 {
		return nil
	}
	if ModeOf(children[0].Name) == recipes.Write {
		return children[:1]
	}
	for i, c := range children {
		if ModeOf(c.Name) == recipes.Write {
			return children[:i]
		}
	}
	return children
}
