package etcd

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

// Enqueue is CreateSequential with tag + "-" as the prefix: the key
// parent/<tag>-<lease>-<n>, protected the same way. Node.Prev is empty:
// revisions are cluster-wide, so no name follows from mine.
func (s *Session) Enqueue(ctx context.Context, parent, tag string) (backends.Node, error) {
	if strings.Contains(tag, "/") {
		return backends.Node{}, fmt.Errorf("%w: queue tag %q holds a '/'", ErrInvalidPath, tag)
	}
	return s.CreateSequential(ctx, parent, tag+"-", nil)
}

// Predecessor is one bounded range, as concurrency.Mutex waits: the keys
// under parent+"/" created at or below me.Seq, newest first, limit 2, keys
// only, which are me and the key just before me. The reply holds two keys
// whatever the queue's length (O(1) bytes and one request), though the
// server still walks the whole range to filter and sort it (in its
// in-memory index: etcd 3.7 answers a keys-only range without reading
// values). If the newest
// is not me, me is gone (ErrNoNode). A key deeper than a direct child is
// skipped by asking again below it (queues have none).
func (s *Session) Predecessor(ctx context.Context, parent string, me backends.Node) (backends.Node, bool, error) {
	if err := checkPath(parent); err != nil {
		return backends.Node{}, false, err
	}
	c, stop, err := s.call(ctx)
	if err != nil {
		return backends.Node{}, false, err
	}
	defer stop()
	below, limit := me.Seq, int64(2)
	for below > 0 {
		opts := append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithMaxCreateRev(below)}, clientv3.WithLastCreate()...)
		resp, err := s.cli.Get(c, parent+"/", append(opts, clientv3.WithLimit(limit))...)
		if err != nil {
			return backends.Node{}, false, s.fail(ctx, "predecessor", parent, false, err)
		}
		kvs := resp.Kvs
		if limit == 2 {
			if len(kvs) == 0 || string(kvs[0].Key) != me.Path {
				return backends.Node{}, false, fmt.Errorf("etcd: predecessor of %s: %w", me.Path, backends.ErrNoNode)
			}
			kvs = kvs[1:]
		}
		if len(kvs) == 0 {
			return backends.Node{}, false, nil
		}
		kv := kvs[0]
		if isDirectChild(parent, string(kv.Key)) {
			return nodeOf(kv), true, nil
		}
		below, limit = kv.CreateRevision-1, 1
	}
	return backends.Node{}, false, nil
}

// Tagged reads the keys parent/<tag>-... (O(own) bytes; not keys only,
// whose fast path in etcd 3.7 answers from the index without the lease) and
// keeps those held by this session's lease.
func (s *Session) Tagged(ctx context.Context, parent, tag string) ([]backends.Node, error) {
	if err := checkPath(parent); err != nil {
		return nil, err
	}
	c, stop, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	resp, err := s.cli.Get(c, parent+"/"+tag+"-", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, s.fail(ctx, "tagged", parent, false, err)
	}
	var nodes []backends.Node
	for _, kv := range resp.Kvs {
		if kv.Lease == int64(s.lease) && isDirectChild(parent, string(kv.Key)) {
			nodes = append(nodes, nodeOf(kv))
		}
	}
	return nodes, nil
}

// Dequeue is Delete: etcd's watcher learns nothing more from one write, and
// the fair lock's Predecessor is already one bounded range.
func (s *Session) Dequeue(ctx context.Context, me backends.Node) error {
	return s.Delete(ctx, me.Path)
}
