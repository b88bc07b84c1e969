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

// Enqueue is CreateSequential with tag + "-" as the prefix: the key
// parent/<tag>-<lease>-<n>, protected the same way, made in a transaction
// that also reads and moves the queue's tail, the key parent + "\x00/tail"
// holding the path of the last node enqueued under parent:
//
//	If(CreateRevision(key) == 0)
//	Then(Get(tail), Put(tail, key, my lease), Put(key, my lease))
//	Else(Get(key))
//
// Transactions apply one at a time, so the tail read is the node enqueued
// just before mine under parent: Node.Prev, at no request of its own and
// O(1) work on the server, whatever the queue's length (a Predecessor
// range walks every key of the queue). Prev is empty when the tail's last
// writer's session has ended (the tail carries its lease, so nothing is
// left when a case's sessions close) or when a retry found that an earlier
// try landed. The tail sits outside the parent's prefix ('\x00' sorts
// before '/'), so no listing, Predecessor or Tagged of parent sees it, and
// below parent's own parent only as a deeper key, not a child.
func (s *Session) Enqueue(ctx context.Context, parent, tag string) (backends.Node, error) {
	if strings.Contains(tag, "/") {
		return backends.Node{}, fmt.Errorf("%w: queue tag %q holds a '/'", ErrInvalidPath, tag)
	}
	tail := parent + tailSuffix
	put := func(ctx context.Context, key string, data []byte) (*clientv3.TxnResponse, error) {
		return s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpGet(tail), clientv3.OpPut(tail, key, clientv3.WithLease(s.lease)),
				clientv3.OpPut(key, string(data), clientv3.WithLease(s.lease))).
			Else(clientv3.OpGet(key)).
			Commit()
	}
	result := func(key string, resp *clientv3.TxnResponse) (backends.Node, error) {
		n, err := s.sequentialResult(key, resp)
		if err == nil && resp.Succeeded && len(resp.Responses) > 0 {
			if r := resp.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
				n.Prev = string(r.Kvs[0].Value)
			}
		}
		return n, err
	}
	return s.createSequential(ctx, parent, tag+"-", nil, put, result)
}

// tailSuffix names a queue's tail key after its parent's path (see Enqueue).
const tailSuffix = "\x00/tail"

// Predecessor is one bounded range, as concurrency.Mutex waits: the keys
// under parent+"/" created at or below me.Seq, newest first, limit 2, keys
// only, which are me and the key just before me. The reply holds two keys
// whatever the queue's length (O(1) bytes and one request), though the
// server walks the whole range to filter and sort it (in its in-memory
// index: etcd 3.7 answers a keys-only range without reading values). If
// the newest is not me, me is gone (ErrNoNode). A key deeper than a direct
// child is skipped by asking again below it (queues have none).
//
// With gone, the request is one read-only transaction that skips the walk
// when gone left by Dequeue:
//
//	If(Value(parent + "\x00/dequeued") == gone)
//	Then(Get(me, keys only))
//	Else(the range above)
//
// Dequeue writes that key in the transaction that deletes its node, so a
// handoff costs the server O(1) work whatever the queue's length; any
// other departure (a waiter cancelled or expired, the record's writer's
// session ended) takes the range.
func (s *Session) Predecessor(ctx context.Context, parent string, me backends.Node, gone string) (backends.Node, bool, error) {
	c, stop, err := s.callAt(ctx, parent)
	if err != nil {
		return backends.Node{}, false, err
	}
	defer stop()
	lostMe := fmt.Errorf("etcd: predecessor of %s: %w", me.Path, backends.ErrNoNode)
	below, limit, listed := me.Seq, int64(2), int64(0)
	for below > 0 {
		opts := rangeBelow(below, limit)
		var kvs []*mvccpb.KeyValue
		if gone != "" {
			resp, err := s.cli.Txn(c).
				If(clientv3.Compare(clientv3.Value(parent+dequeuedSuffix), "=", gone)).
				Then(clientv3.OpGet(me.Path, clientv3.WithKeysOnly())).
				Else(clientv3.OpGet(parent+"/", opts...)).
				Commit()
			if err != nil {
				return backends.Node{}, false, s.fail(ctx, "predecessor", parent, false, err)
			}
			kvs = resp.Responses[0].GetResponseRange().GetKvs()
			listed += keyNames(kvs)
			if resp.Succeeded {
				if len(kvs) == 0 {
					return backends.Node{Listed: listed}, false, lostMe
				}
				return backends.Node{Listed: listed}, false, nil
			}
			gone = ""
		} else {
			resp, err := s.cli.Get(c, parent+"/", opts...)
			if err != nil {
				return backends.Node{}, false, s.fail(ctx, "predecessor", parent, false, err)
			}
			kvs = resp.Kvs
			listed += keyNames(kvs)
		}
		if limit == 2 {
			if len(kvs) == 0 || string(kvs[0].Key) != me.Path {
				return backends.Node{Listed: listed}, false, lostMe
			}
			kvs = kvs[1:]
		}
		n, done, next := nearestOf(parent, kvs, listed)
		if done {
			return n, n.Path != "", nil
		}
		below, limit = next, 1
	}
	return backends.Node{Listed: listed}, false, nil
}

// PredecessorOf is Predecessor among the children whose names start with
// prefix, in one read-only transaction:
//
//	If(CreateRevision(me) > 0)
//	Then(Get(parent/prefix.., created below me, newest first, limit 1, keys only))
//
// The reply holds one key whatever the queue's length (O(1) bytes, as
// Predecessor's); the server walks the keys under the prefix in its index.
// A failed compare means me is gone (ErrNoNode). A key deeper than a
// direct child is skipped by asking again below it.
func (s *Session) PredecessorOf(ctx context.Context, parent, prefix string, me backends.Node) (backends.Node, bool, error) {
	c, stop, err := s.callAt(ctx, parent)
	if err != nil {
		return backends.Node{}, false, err
	}
	defer stop()
	if strings.Contains(prefix, "/") {
		return backends.Node{}, false, fmt.Errorf("%w: predecessor prefix %q holds a '/'", ErrInvalidPath, prefix)
	}
	var listed int64
	for below := me.Seq - 1; below > 0; {
		opts := rangeBelow(below, 1)
		resp, err := s.cli.Txn(c).
			If(clientv3.Compare(clientv3.CreateRevision(me.Path), ">", 0)).
			Then(clientv3.OpGet(parent+"/"+prefix, opts...)).
			Commit()
		if err != nil {
			return backends.Node{}, false, s.fail(ctx, "predecessor", parent, false, err)
		}
		if !resp.Succeeded {
			return backends.Node{}, false, fmt.Errorf("etcd: predecessor of %s: %w", me.Path, backends.ErrNoNode)
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		listed += keyNames(kvs)
		n, done, next := nearestOf(parent, kvs, listed)
		if done {
			return n, n.Path != "", nil
		}
		below = next
	}
	return backends.Node{Listed: listed}, false, nil
}

// rangeBelow are a predecessor range's options: keys only under a prefix,
// created at or below revision below, newest first, at most limit. The
// limit comes last: WithLastCreate sets a limit of 1 of its own.
func rangeBelow(below, limit int64) []clientv3.OpOption {
	opts := append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithMaxCreateRev(below)}, clientv3.WithLastCreate()...)
	return append(opts, clientv3.WithLimit(limit))
}

// nearestOf reads a predecessor range's reply (newest first, me left
// out): done with the node found (Path empty if none), Listed set; or not
// done, and the create revision to ask again below, when the newest key is
// deeper than a direct child of parent.
func nearestOf(parent string, kvs []*mvccpb.KeyValue, listed int64) (n backends.Node, done bool, below int64) {
	if len(kvs) == 0 {
		return backends.Node{Listed: listed}, true, 0
	}
	kv := kvs[0]
	if !isDirectChild(parent, string(kv.Key)) {
		return backends.Node{}, false, kv.CreateRevision - 1
	}
	n = nodeOf(kv)
	n.Listed = listed
	return n, true, 0
}

// keyNames is the bytes of the names (last path elements) of kvs' keys, as
// the instrument counts a listing's.
func keyNames(kvs []*mvccpb.KeyValue) int64 {
	var n int64
	for _, kv := range kvs {
		n += int64(len(path.Base(string(kv.Key))))
	}
	return n
}

// Tagged reads the keys parent/<tag>-... (O(own) bytes; not keys only,
// whose fast path in etcd 3.7 answers from the index without the lease) and
// keeps those held by this session's lease.
func (s *Session) Tagged(ctx context.Context, parent, tag string) ([]backends.Node, error) {
	c, stop, err := s.callAt(ctx, parent)
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

// Dequeue deletes me and records it as the queue's last-dequeued key,
// parent + "\x00/dequeued" (beside the tail, outside the parent's prefix,
// on this session's lease), in one transaction:
//
//	If(CreateRevision(me) > 0)
//	Then(Delete(me), Put(parent + "\x00/dequeued", me, my lease))
//
// One write and one event to me's watcher (EventDeleted), which learns
// that me left by Dequeue from Predecessor with gone. etcd cannot mark and
// delete one key in one transaction (it refuses a put and a delete of one
// key), and a mark followed by the delete sends two events to a watcher
// whose cancel has not reached the server yet (measured: 2 server
// notifications a release in the herd test, against 1), so the record is
// a key of its own.
func (s *Session) Dequeue(ctx context.Context, me backends.Node) error {
	return s.ifExists(ctx, "dequeue", me.Path, clientv3.OpDelete(me.Path),
		clientv3.OpPut(path.Dir(me.Path)+dequeuedSuffix, me.Path, clientv3.WithLease(s.lease)))
}

// dequeuedSuffix names a queue's last-dequeued key after its parent's path
// (see Dequeue).
const dequeuedSuffix = "\x00/dequeued"
