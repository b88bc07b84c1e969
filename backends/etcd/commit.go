package etcd

import (
	"context"
	"fmt"
	"path"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

var _ backends.Committer = (*Session)(nil)

// ChildrenVersion lists parent's children as Children does, and the version
// of the key parent (0 if absent), in one read: a transaction without
// compares, Then(Get(parent), the range Children reads), so both are of
// one revision. Only a put of parent moves the version (Bump); creating or
// deleting a child does not.
func (s *Session) ChildrenVersion(ctx context.Context, parent string) ([]backends.Node, int64, error) {
	c, stop, err := s.callAt(ctx, parent)
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	resp, err := s.cli.Txn(c).Then(
		clientv3.OpGet(parent),
		clientv3.OpGet(parent+"/", childrenRange()...),
	).Commit()
	if err != nil {
		return nil, 0, s.fail(ctx, "children-version", parent, false, err)
	}
	if len(resp.Responses) != 2 {
		return nil, 0, fmt.Errorf("etcd: children-version %s: %d responses to 2 reads", parent, len(resp.Responses))
	}
	var version int64
	if r := resp.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
		version = r.Kvs[0].Version
	}
	r := resp.Responses[1].GetResponseRange()
	if r == nil {
		return nil, 0, fmt.Errorf("etcd: children-version %s: no range response", parent)
	}
	direct := directKVs(parent, r.Kvs)
	kids := make([]backends.Node, len(direct))
	for i, kv := range direct {
		kids[i] = nodeOf(kv)
		kids[i].DataVersion = kv.Version - 1 // the range carries it
	}
	return kids, version, nil
}

// Commit is one transaction: If(every op's compare) Then(every op's
// write), with no Else, so nothing is applied unless all compares hold
// (ErrConflict). Per op:
//
//	OpCheck:    Version(path) == v
//	OpBump:     Put(path, "") without a lease (version + 1; made if absent)
//	OpCreate:   CreateRevision(key) == 0, Put(key, data, the session's lease),
//	            key named as CreateSequential names it: parent/<prefix><tag>-<n>
//	OpDelete:   CreateRevision(path) > 0, Delete(path and its companion, as Delete)
//	OpSetFresh: Version(path) == 1, Put(path, data, IgnoreLease)
//	OpDeleteFresh: Version(path) == 1, Delete(path and its companion)
//
// A key's version is 1 from its create until its first write after it, so
// Version == 1 fails on an absent key (0) and on one written since (> 1).
//
// Every write of the transaction has its revision, so each created node's
// Seq and CreateRev is the reply's header revision. A lost reply matches
// ErrUnknownOutcome; the transaction is not sent again.
func (s *Session) Commit(ctx context.Context, ops ...backends.Op) ([]backends.Node, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	var (
		cmps    []clientv3.Cmp
		writes  []clientv3.Op
		created []backends.Node
	)
	for i, o := range ops {
		if err := checkPath(o.Path); err != nil {
			return nil, err
		}
		switch o.Kind {
		case backends.OpCheck:
			cmps = append(cmps, clientv3.Compare(clientv3.Version(o.Path), "=", o.Version))
		case backends.OpBump:
			writes = append(writes, clientv3.OpPut(o.Path, ""))
		case backends.OpCreate:
			if strings.Contains(o.Prefix, "/") {
				return nil, fmt.Errorf("%w: sequential prefix %q holds a '/'", ErrInvalidPath, o.Prefix)
			}
			key := s.sequentialKey(o.Path, o.Prefix)
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			writes = append(writes, clientv3.OpPut(key, string(o.Data), clientv3.WithLease(s.lease)))
			created = append(created, backends.Node{Path: key, Name: path.Base(key)})
		case backends.OpDelete:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(o.Path), ">", 0))
			// The range takes an Enqueue'd node's companion with it, as
			// Delete does, so that its watchers see a deletion, not a
			// Dequeue (see companionOf, ExistsW).
			writes = append(writes, clientv3.OpDelete(o.Path, clientv3.WithRange(companionEnd(o.Path))))
		case backends.OpDeleteFresh:
			cmps = append(cmps, clientv3.Compare(clientv3.Version(o.Path), "=", 1))
			writes = append(writes, clientv3.OpDelete(o.Path, clientv3.WithRange(companionEnd(o.Path))))
		case backends.OpSetFresh:
			cmps = append(cmps, clientv3.Compare(clientv3.Version(o.Path), "=", 1))
			writes = append(writes, clientv3.OpPut(o.Path, string(o.Data), clientv3.WithIgnoreLease()))
		default:
			return nil, fmt.Errorf("etcd: commit %s: op %d has unknown kind %d", o.Path, i, o.Kind)
		}
	}
	first := ops[0].Path
	c, stop, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	resp, err := s.cli.Txn(c).If(cmps...).Then(writes...).Commit()
	if err != nil {
		return nil, s.fail(ctx, "commit", first, true, err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("etcd: commit %s (%d ops): %w", first, len(ops), backends.ErrConflict)
	}
	rev := resp.Header.Revision
	for i := range created {
		created[i].Seq, created[i].CreateRev = rev, rev
	}
	return created, nil
}
