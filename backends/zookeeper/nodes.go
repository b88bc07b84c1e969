package zookeeper

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// Create makes an ephemeral node: one write, nothing else. Node.CreateRev
// is 0: go-zookeeper v1.0.4 has no create2, so learning the czxid would
// cost a read that the caller may not need (Get reads it). A connection
// loss mid-create returns backends.ErrUnknownOutcome: the node may exist,
// owned by this session.
func (s *Session) Create(ctx context.Context, p string, data []byte) (backends.Node, error) {
	_, err := write(ctx, s, "create", p, func() (string, error) {
		return s.l.conn.Create(p, data, zk.FlagEphemeral, acl)
	})
	if err != nil {
		s.refused(err, 1)
		return backends.Node{}, err
	}
	s.own(p, true)
	n := node(p)
	n.Seq = 0
	return n, nil
}

// Get reads a node's data; Node.CreateRev is its czxid.
func (s *Session) Get(ctx context.Context, p string) ([]byte, backends.Node, error) {
	type got struct {
		data []byte
		st   *zk.Stat
	}
	g, err := read(ctx, s, "get", p, func() (got, error) {
		data, st, err := s.l.conn.Get(p)
		return got{data, st}, err
	})
	if err != nil {
		return nil, backends.Node{}, err
	}
	n := node(p)
	n.CreateRev = g.st.Czxid
	return g.data, n, nil
}

// Delete removes a node whatever its version. A connection loss mid-delete
// returns backends.ErrUnknownOutcome.
func (s *Session) Delete(ctx context.Context, p string) error {
	_, err := write(ctx, s, "delete", p, func() (struct{}, error) {
		return struct{}{}, s.l.conn.Delete(p, -1)
	})
	s.refused(err, 1)
	if err == nil || errors.Is(err, backends.ErrNoNode) {
		s.own(p, false)
	}
	return err
}

// Children lists parent's children ordered by Seq, then name. Seq is parsed
// from the 10-digit suffix ZooKeeper gives sequential nodes; CreateRev is
// left 0 (it would cost a read per child).
func (s *Session) Children(ctx context.Context, parent string) ([]backends.Node, error) {
	names, err := read(ctx, s, "children", parent, func() ([]string, error) {
		names, _, err := s.l.conn.Children(parent)
		return names, err
	})
	if err != nil {
		return nil, err
	}
	return childNodes(parent, names), nil
}

// EnsurePath makes p and its missing ancestors as persistent, empty nodes.
// Nodes that appear meanwhile (ErrNodeExists) are fine; a create whose
// outcome is unknown is retried, which is safe for the same reason.
func (s *Session) EnsurePath(ctx context.Context, p string) error {
	if p == "/" {
		return nil
	}
	if ok, err := s.exists(ctx, p); err != nil || ok {
		return err
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		for {
			if w := s.l.witness; w != nil {
				w.PathCreates.Add(1)
			}
			_, err := write(ctx, s, "create", cur, func() (string, error) {
				return s.l.conn.Create(cur, nil, 0, acl)
			})
			if err == nil && s.l.witness != nil {
				s.l.witness.PathsCreated.Add(1)
			}
			if err == nil || errors.Is(err, backends.ErrNodeExists) {
				break
			}
			if !errors.Is(err, backends.ErrUnknownOutcome) {
				return err
			}
		}
	}
	return nil
}

func (s *Session) exists(ctx context.Context, p string) (bool, error) {
	return read(ctx, s, "exists", p, func() (bool, error) {
		ok, _, err := s.l.conn.Exists(p)
		return ok, err
	})
}

// node describes path p, with Seq parsed from its name.
func node(p string) backends.Node {
	name := path.Base(p)
	return backends.Node{Path: p, Name: name, Seq: parseSeq(name)}
}

// Set writes data to the persistent node p, whatever its version: one
// setData when p exists, else a persistent create (its parent must exist),
// and setData again if another client created it meanwhile. A connection
// loss mid-write returns backends.ErrUnknownOutcome.
func (s *Session) Set(ctx context.Context, p string, data []byte) error {
	for {
		_, err := write(ctx, s, "set", p, func() (*zk.Stat, error) {
			return s.l.conn.Set(p, data, -1)
		})
		if !errors.Is(err, backends.ErrNoNode) {
			return err
		}
		_, err = write(ctx, s, "create", p, func() (string, error) {
			return s.l.conn.Create(p, data, 0, acl)
		})
		if !errors.Is(err, backends.ErrNodeExists) {
			s.refused(err, 1) // the parent is missing
			return err
		}
	}
}

var _ backends.Updater = (*Session)(nil)

// Update writes data to p whatever its version (setData, version -1); the
// node keeps its owner. ErrNoNode if absent.
func (s *Session) Update(ctx context.Context, p string, data []byte) error {
	_, err := write(ctx, s, "update", p, func() (*zk.Stat, error) {
		return s.l.conn.Set(p, data, -1)
	})
	s.refused(err, 1)
	return err
}

// refused counts writes of a call the server refused without a change
// (backends.Witness.RefusedWrites): it answered that the node was there,
// or was not.
func (s *Session) refused(err error, writes int64) {
	if s.l.witness != nil && (errors.Is(err, backends.ErrNodeExists) || errors.Is(err, backends.ErrNoNode)) {
		s.l.witness.RefusedWrites.Add(writes)
	}
}
