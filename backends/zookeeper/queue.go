package zookeeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// Enqueue makes an ephemeral sequential node under parent named by its
// sequence number alone ("0000000042": 14 bytes a waiter in a listing,
// against 49 for CreateSequential's protected names), whose data is tag +
// "/" + 8 random hex digits unique to this call. Node.Prev is the name
// with the sequence number one less: ZooKeeper numbers a parent's children
// by its creates only (deletes do not count; checked on 3.8 by the
// conformance suite), so that is the sibling made just before, while it
// lives.
//
// If the connection drops after the create was sent, the outcome is
// unknown: Enqueue lists parent (after the reconnect) and reads its
// children, newest first, for this call's data and this session's
// ownership, and returns that node, or creates again if there is none. That
// costs a read per child, on this failure path only.
func (s *Session) Enqueue(ctx context.Context, parent, tag string) (backends.Node, error) {
	if strings.Contains(tag, "/") {
		return backends.Node{}, fmt.Errorf("zookeeper: queue tag %q holds a '/'", tag)
	}
	data := []byte(fmt.Sprintf("%s/%08x", tag, rand.Uint32()))
	p, err := s.createFindable(ctx, "enqueue", join(parent, ""), data, func() (string, bool, error) {
		// Look for this call's data.
		found, err := s.mine(ctx, parent, func(d []byte) bool { return bytes.Equal(d, data) }, true)
		if err != nil || len(found) == 0 {
			return "", false, err
		}
		return found[0].Path, true, nil
	})
	if err != nil {
		return backends.Node{}, err
	}
	return s.enqueued(p), nil
}

// enqueued completes an Enqueue that made path p.
func (s *Session) enqueued(p string) backends.Node {
	n := s.made(p)
	if n.Seq > 0 {
		n.Prev = p[:len(p)-len(n.Name)] + fmt.Sprintf("%0*d", seqDigits, n.Seq-1)
	}
	return n
}

// Predecessor lists parent (ZooKeeper has no bounded query for it) and
// returns the child with the largest sequence number below me.Seq, or
// ErrNoNode if me is not in the listing (or parent is gone). It
// keeps only that child of the listing, so a wake-up leaves no garbage
// that grows with the queue beyond the listing go-zookeeper decodes. gone
// is ignored: a watcher learns of a Dequeue from its event.
func (s *Session) Predecessor(ctx context.Context, parent string, me backends.Node, _ string) (backends.Node, bool, error) {
	return s.PredecessorOf(ctx, parent, "", me)
}

// PredecessorOf is Predecessor among the children whose names start with
// prefix: one listing, as Predecessor (ZooKeeper has no bounded or filtered
// child query, so the reply is O(N) bytes whatever prefix is).
func (s *Session) PredecessorOf(ctx context.Context, parent, prefix string, me backends.Node) (backends.Node, bool, error) {
	names, err := read(ctx, s, "predecessor", parent, func() ([]string, error) {
		names, _, err := s.l.conn.Children(parent)
		return names, err
	})
	if err != nil {
		return backends.Node{}, false, err
	}
	best, bestSeq, found, listed := "", int64(-1), false, int64(0)
	for _, name := range names {
		listed += int64(len(name))
		if name == me.Name {
			found = true
		} else if seq := parseSeq(name); seq < me.Seq && seq > bestSeq && strings.HasPrefix(name, prefix) {
			best, bestSeq = name, seq
		}
	}
	if !found {
		return backends.Node{Listed: listed}, false, fmt.Errorf("zookeeper: predecessor of %s: %w", me.Path, backends.ErrNoNode)
	}
	if bestSeq < 0 {
		return backends.Node{Listed: listed}, false, nil
	}
	n := node(join(parent, best))
	n.Listed = listed
	return n, true, nil
}

// Tagged lists parent and reads every child for the data Enqueue gave it
// with tag and for this session's ownership: a request per child, which is
// why queues call it only after a failure.
func (s *Session) Tagged(ctx context.Context, parent, tag string) ([]backends.Node, error) {
	prefix := []byte(tag + "/")
	return s.mine(ctx, parent, func(d []byte) bool { return bytes.HasPrefix(d, prefix) }, false)
}

// mine returns parent's children owned by this session whose data match,
// ordered by Seq (newest first and at most one if first is set). An absent
// parent has none.
func (s *Session) mine(ctx context.Context, parent string, match func([]byte) bool, first bool) ([]backends.Node, error) {
	kids, err := s.Children(ctx, parent)
	if errors.Is(err, backends.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	id := s.ID()
	var found []backends.Node
	for i := len(kids) - 1; i >= 0; i-- {
		k := kids[i]
		type got struct {
			data []byte
			st   *zk.Stat
		}
		g, err := read(ctx, s, "get", k.Path, func() (got, error) {
			data, st, err := s.l.conn.Get(k.Path)
			return got{data, st}, err
		})
		if errors.Is(err, backends.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if g.st.EphemeralOwner == id && match(g.data) {
			found = append(found, k)
			if first {
				break
			}
		}
	}
	for i, j := 0, len(found)-1; i < j; i, j = i+1, j-1 {
		found[i], found[j] = found[j], found[i]
	}
	return found, nil
}

// dequeuedData is what Dequeue's multi sets before the delete.
var dequeuedData = []byte("dequeued")

// Dequeue is one multi: setData(me, "dequeued") then delete(me), applied
// as one transaction. The setData fires the data watch an ExistsW armed on
// me (EventDataChanged), which consumes it, so a watcher sees that and not
// the delete. A connection loss mid-write returns
// backends.ErrUnknownOutcome.
func (s *Session) Dequeue(ctx context.Context, me backends.Node) error {
	_, err := write(ctx, s, "dequeue", me.Path, func() ([]zk.MultiResponse, error) {
		res, err := s.l.conn.Multi(&zk.SetDataRequest{Path: me.Path, Data: dequeuedData, Version: -1},
			&zk.DeleteRequest{Path: me.Path, Version: -1})
		if err == nil {
			for _, r := range res {
				if r.Error != nil {
					return res, r.Error
				}
			}
		}
		return res, err
	})
	s.refused(err, 2) // the multi's setData and delete
	if err == nil || errors.Is(err, backends.ErrNoNode) {
		s.own(me.Path, false)
	}
	return err
}
