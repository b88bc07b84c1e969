package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

var _ backends.Committer = (*Session)(nil)

// ChildrenVersion lists parent's children as Children does, with the data
// version of parent that the same getChildren reply carried (its Stat): one
// read. The version moves with every setData of parent (Commit's OpBump),
// not with its children. ErrNoNode if parent is absent.
func (s *Session) ChildrenVersion(ctx context.Context, parent string) ([]backends.Node, int64, error) {
	type listing struct {
		names []string
		st    *zk.Stat
	}
	l, err := read(ctx, s, "children", parent, func() (listing, error) {
		names, st, err := s.l.conn.Children(parent)
		return listing{names, st}, err
	})
	if err != nil {
		return nil, 0, err
	}
	var version int64
	if l.st != nil {
		version = int64(l.st.Version)
	}
	return childNodes(parent, l.names), version, nil
}

// Commit sends ops as one multi, which ZooKeeper applies all or none:
//
//   - OpCheck: a check of Path's data version (checkVersion);
//   - OpBump: setData(Path, empty, any version). ZooKeeper's setData
//     replaces the data, so a bumped node is left empty: Bump is for the
//     persistent directories EnsurePath makes, which hold none;
//   - OpCreate: an ephemeral sequential create of Path/Prefix<10 digits>
//     holding Data, owned by this session;
//   - OpDelete: delete(Path, any version);
//   - OpDeleteFresh: delete(Path, version 0);
//   - OpSetFresh: setData(Path, Data, version 0): the node keeps its owner,
//     and only a node whose data was never set since its create matches.
//
// The server counts the multi as one request (one write in
// zk_cnt_updatelatency); its per-namespace write count has one write for
// each create, delete and setData that applied (none for a check, none at
// all for a multi that failed).
//
// If an op fails, nothing is applied and the error names it: a check that
// found another version or no node, a delete or setData that found no node
// (or, for OpSetFresh, a changed one) match backends.ErrConflict; a create
// whose parent is absent matches backends.ErrNoNode. A connection loss
// after the request may have been sent matches backends.ErrUnknownOutcome
// and the multi is not sent again: its creates may exist, owned by this
// session, without this session knowing them. No ops: nothing is sent.
func (s *Session) Commit(ctx context.Context, ops ...backends.Op) ([]backends.Node, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	reqs := make([]any, len(ops))
	for i, o := range ops {
		r, err := multiOp(o)
		if err != nil {
			return nil, fmt.Errorf("zookeeper: commit %s: op %d: %w", ops[0].Path, i, err)
		}
		reqs[i] = r
	}
	res, err := write(ctx, s, "commit", ops[0].Path, func() ([]zk.MultiResponse, error) {
		return s.l.conn.Multi(reqs...)
	})
	if err != nil {
		if i, opErr := failedOp(res); i >= 0 && i < len(ops) {
			// The server answered and applied nothing.
			if w := s.l.witness; w != nil {
				w.RefusedWrites.Add(1)
			}
			if (ops[i].Kind == backends.OpDelete || ops[i].Kind == backends.OpDeleteFresh) && errors.Is(opErr, zk.ErrNoNode) {
				s.own(ops[i].Path, false)
			}
			return nil, opFailed(ops, i, opErr)
		}
		return nil, err
	}
	if len(res) != len(ops) {
		return nil, fmt.Errorf("zookeeper: commit %s: %d results for %d ops", ops[0].Path, len(res), len(ops))
	}
	if w := s.l.witness; w != nil {
		w.MultiWrites.Add(int64(changes(ops)) - 1)
	}
	var made []backends.Node
	for i, o := range ops {
		switch o.Kind {
		case backends.OpCreate:
			made = append(made, s.made(res[i].String))
		case backends.OpDelete, backends.OpDeleteFresh:
			s.own(o.Path, false)
		}
	}
	return made, nil
}

// multiOp is the go-zookeeper request for o.
func multiOp(o backends.Op) (any, error) {
	switch o.Kind {
	case backends.OpCheck:
		if o.Version < 0 || o.Version > math.MaxInt32 {
			// -1 would be "any version" to ZooKeeper.
			return nil, fmt.Errorf("check %s: version %d out of range", o.Path, o.Version)
		}
		return &zk.CheckVersionRequest{Path: o.Path, Version: int32(o.Version)}, nil
	case backends.OpBump:
		return &zk.SetDataRequest{Path: o.Path, Data: nil, Version: -1}, nil
	case backends.OpCreate:
		if strings.Contains(o.Prefix, "/") {
			return nil, fmt.Errorf("create under %s: prefix %q holds a '/'", o.Path, o.Prefix)
		}
		return &zk.CreateRequest{Path: join(o.Path, o.Prefix), Data: o.Data, Acl: acl,
			Flags: zk.FlagEphemeral | zk.FlagSequence}, nil
	case backends.OpDelete:
		return &zk.DeleteRequest{Path: o.Path, Version: -1}, nil
	case backends.OpDeleteFresh:
		return &zk.DeleteRequest{Path: o.Path, Version: 0}, nil
	case backends.OpSetFresh:
		return &zk.SetDataRequest{Path: o.Path, Data: o.Data, Version: 0}, nil
	}
	return nil, fmt.Errorf("%s: unknown op kind %d", o.Path, o.Kind)
}

// failedOp returns the index and error of the op that failed a multi the
// server answered, or -1. ZooKeeper answers a failed multi with an error
// result for every op: ZOK for those before the failing one (nil here),
// the failure's code for it, and RUNTIMEINCONSISTENCY (-2, which
// go-zookeeper has no sentinel for) for those after; so the first error is
// the failing op's.
func failedOp(res []zk.MultiResponse) (int, error) {
	for i, r := range res {
		if r.Error != nil {
			return i, r.Error
		}
	}
	return -1, nil
}

// opFailed is the error of a multi whose op i failed with err.
func opFailed(ops []backends.Op, i int, err error) error {
	o := ops[i]
	what := fmt.Sprintf("zookeeper: commit %s: op %d (%s %s)", ops[0].Path, i, opName(o.Kind), o.Path)
	switch {
	case o.Kind == backends.OpCreate && errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%s: %w (no parent): %w", what, backends.ErrNoNode, err)
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists):
		return fmt.Errorf("%s: %w: %w", what, backends.ErrConflict, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func opName(k backends.OpKind) string {
	switch k {
	case backends.OpCheck:
		return "check"
	case backends.OpBump:
		return "bump"
	case backends.OpCreate:
		return "create"
	case backends.OpDelete:
		return "delete"
	case backends.OpSetFresh:
		return "set-fresh"
	case backends.OpDeleteFresh:
		return "delete-fresh"
	}
	return fmt.Sprintf("op-kind-%d", int(k))
}

// changes counts the ops of a multi that change the tree (all but checks).
func changes(ops []backends.Op) int {
	n := 0
	for _, o := range ops {
		if o.Kind != backends.OpCheck {
			n++
		}
	}
	return n
}
