package etcd

import (
	"context"
	"fmt"
	"path"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

// checkPath accepts absolute, clean paths other than "/".
func checkPath(p string) error {
	if p == "" || p[0] != '/' || p == "/" || path.Clean(p) != p {
		return fmt.Errorf("%w: %q (want an absolute clean path like /a/b)", ErrInvalidPath, p)
	}
	return nil
}

// nodeOf describes key kv.
func nodeOf(kv *mvccpb.KeyValue) backends.Node {
	k := string(kv.Key)
	return backends.Node{Path: k, Name: path.Base(k), Seq: kv.CreateRevision, CreateRev: kv.CreateRevision}
}

// Create puts path with the session's lease if it does not exist:
// Txn If(CreateRevision(path) == 0) Then Put(path, data, lease) Else Get.
// Node.Seq and Node.CreateRev are the create revision (a fencing token).
// A cancelled ctx or a broken connection may leave the key created: the
// error then also matches backends.ErrUnknownOutcome.
func (s *Session) Create(ctx context.Context, p string, data []byte) (backends.Node, error) {
	c, stop, err := s.callAt(ctx, p)
	if err != nil {
		return backends.Node{}, err
	}
	defer stop()
	resp, err := s.putIfAbsent(c, p, data)
	if err != nil {
		return backends.Node{}, s.fail(ctx, "create", p, true, err)
	}
	if !resp.Succeeded {
		return backends.Node{}, fmt.Errorf("etcd: create %s: %w", p, backends.ErrNodeExists)
	}
	rev := resp.Header.Revision
	return backends.Node{Path: p, Name: path.Base(p), Seq: rev, CreateRev: rev}, nil
}

// putIfAbsent is the create transaction; on failure its Else branch reads
// the key that is there.
func (s *Session) putIfAbsent(ctx context.Context, key string, data []byte) (*clientv3.TxnResponse, error) {
	return s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data), clientv3.WithLease(s.lease))).
		Else(clientv3.OpGet(key)).
		Commit()
}

// Get reads path. ErrNoNode if absent.
func (s *Session) Get(ctx context.Context, p string) ([]byte, backends.Node, error) {
	c, stop, err := s.callAt(ctx, p)
	if err != nil {
		return nil, backends.Node{}, err
	}
	defer stop()
	resp, err := s.cli.Get(c, p)
	if err != nil {
		return nil, backends.Node{}, s.fail(ctx, "get", p, false, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, backends.Node{}, fmt.Errorf("etcd: get %s: %w", p, backends.ErrNoNode)
	}
	return resp.Kvs[0].Value, nodeOf(resp.Kvs[0]), nil
}

// Delete removes path (keys below it are untouched). ErrNoNode if absent.
func (s *Session) Delete(ctx context.Context, p string) error {
	c, stop, err := s.callAt(ctx, p)
	if err != nil {
		return err
	}
	defer stop()
	// The range takes the node's companion with it (see companionOf), in
	// the same revision, so a watcher of an Enqueue'd node tells this
	// removal from Dequeue's.
	resp, err := s.cli.Delete(c, p, clientv3.WithRange(companionEnd(p)), clientv3.WithPrevKV())
	if err != nil {
		return s.fail(ctx, "delete", p, true, err)
	}
	for _, kv := range resp.PrevKvs {
		if string(kv.Key) == p {
			return nil
		}
	}
	return fmt.Errorf("etcd: delete %s: %w", p, backends.ErrNoNode)
}

// Children lists parent's direct children (keys parent+"/"+name with no
// further "/"), sorted by create revision ascending. Keys deeper down are
// read (keys only) and dropped. No watch is armed.
func (s *Session) Children(ctx context.Context, parent string) ([]backends.Node, error) {
	nodes, _, err := s.children(ctx, parent)
	return nodes, err
}

// children also returns the revision the listing was read at.
func (s *Session) children(ctx context.Context, parent string) ([]backends.Node, int64, error) {
	c, stop, err := s.callAt(ctx, parent)
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	resp, err := s.cli.Get(c, parent+"/", childrenRange()...)
	if err != nil {
		return nil, 0, s.fail(ctx, "children", parent, false, err)
	}
	return directChildren(parent, resp.Kvs), resp.Header.Revision, nil
}

// childrenRange gives the range of keys parent+"/" that lists parent's
// children (directChildren keeps the direct ones).
func childrenRange() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)}
}

func directChildren(parent string, kvs []*mvccpb.KeyValue) []backends.Node {
	direct := directKVs(parent, kvs)
	nodes := make([]backends.Node, len(direct))
	for i, kv := range direct {
		nodes[i] = nodeOf(kv)
	}
	return nodes
}

// directKVs is kvs less the keys that are not parent's direct children.
func directKVs(parent string, kvs []*mvccpb.KeyValue) []*mvccpb.KeyValue {
	direct := make([]*mvccpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		if isDirectChild(parent, string(kv.Key)) {
			direct = append(direct, kv)
		}
	}
	return direct
}

func isDirectChild(parent, key string) bool {
	rest, ok := strings.CutPrefix(key, parent+"/")
	return ok && rest != "" && !strings.ContainsAny(rest, "/\x00")
}

// EnsurePath makes nothing: etcd has no directories, and a key's "parent"
// need not exist. Like every call it still fails on a bad path, a done ctx
// or a lost session, so callers see the same errors as on ZooKeeper.
func (s *Session) EnsurePath(ctx context.Context, p string) error {
	if err := checkPath(p); err != nil {
		return err
	}
	if s.ctx.Err() != nil {
		return fmt.Errorf("etcd: ensure-path %s: %w", p, backends.ErrSessionLost)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcd: ensure-path %s: %w", p, err)
	}
	return nil
}

var _ backends.Updater = (*Session)(nil)

// Update writes data to p if it exists, keeping the key's lease whoever owns
// it: Txn If(CreateRevision(p) > 0) Then Put(p, data, IgnoreLease).
// ErrNoNode if absent.
func (s *Session) Update(ctx context.Context, p string, data []byte) error {
	return s.ifExists(ctx, "update", p, clientv3.OpPut(p, string(data), clientv3.WithIgnoreLease()))
}

// ifExists is one write, the transaction If(CreateRevision(p) > 0)
// Then(then...): ErrNoNode if p is absent, ErrUnknownOutcome as for any
// write whose reply was lost. op names it in errors.
func (s *Session) ifExists(ctx context.Context, op, p string, then ...clientv3.Op) error {
	c, stop, err := s.callAt(ctx, p)
	if err != nil {
		return err
	}
	defer stop()
	resp, err := s.cli.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(p), ">", 0)).Then(then...).Commit()
	if err != nil {
		return s.fail(ctx, op, p, true, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd: %s %s: %w", op, p, backends.ErrNoNode)
	}
	return nil
}
