package etcd

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

// Enqueue is CreateSequential with tag + "-" as the prefix: the key
// parent/<tag>-<lease>-<n>, protected the same way, made in a transaction
// that also reads and moves the queue's tail, the key parent + "\x00/tail"
// holding the path of the last node enqueued under parent, and puts the
// node's companion (see companionOf):
//
//	If(CreateRevision(key) == 0)
//	Then(Get(tail), Put(tail, key, my lease), Put(key, my lease),
//	     Put(key + "\x00", my lease))
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
				clientv3.OpPut(key, string(data), clientv3.WithLease(s.lease)),
				clientv3.OpPut(companionOf(key), "", clientv3.WithLease(s.lease))).
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

// companionOf names the companion of an Enqueue'd node: key + "\x00", a key
// no other call makes, which sorts right after key and before any other
// key, and is no child of the parent (isDirectChild). It lives as long as
// the node except after Dequeue: Enqueue puts both in one transaction, and
// Delete and the lease's expiry remove both in one revision, but Dequeue
// deletes the node alone. So the node's watcher (ExistsW watches both) and
// Predecessor told which node went can tell a release from any other
// departure by the companion, without a record to read. A dequeued node's
// companion goes with its successor's Dequeue, or at once with no node
// after it; one whose successor left otherwise stays until its session's
// next Dequeue under the parent (or the lease's end): at most one a
// session a queue, long after its watcher was answered (see Dequeue).
func companionOf(key string) string { return key + "\x00" }

// companionEnd ends the key range [key, companionEnd(key)): key and its
// companion, nothing else.
func companionEnd(key string) string { return key + "\x00\x00" }

// Predecessor is one bounded range, as concurrency.Mutex waits: the keys
// under parent+"/" created at or below me.Seq, newest first, keys only,
// limit predecessorLimit: me, the key just before me, and their
// companions (a node and its companion share a create revision). The
// reply holds a few keys whatever the queue's length (O(1) bytes and one
// request), though the server walks the whole range to filter and sort it
// (in its in-memory index: etcd 3.7 answers a keys-only range without
// reading values). If me is not in it, me is gone (ErrNoNode). Keys that
// are no direct child (companions; deeper keys, which queues have none of)
// are skipped, by asking again below them when they fill the reply.
//
// With gone, the request is one read-only transaction that skips the walk
// when gone left by Dequeue, which deleted it and left its companion:
//
//	If(CreateRevision(gone + "\x00") > 0, CreateRevision(gone) == 0)
//	Then(Get(me, keys only))
//	Else(the range above)
//
// so such an answer costs the server O(1) work whatever the queue's length;
// any other departure (a waiter cancelled or expired, which takes its
// companion with it) takes the range. A watcher of gone learns a Dequeue
// from the event (ExistsW) and asks nothing; this is for a waiter that
// found its predecessor gone before it could watch it.
func (s *Session) Predecessor(ctx context.Context, parent string, me backends.Node, gone string) (backends.Node, bool, error) {
	c, stop, err := s.callAt(ctx, parent)
	if err != nil {
		return backends.Node{}, false, err
	}
	defer stop()
	lostMe := fmt.Errorf("etcd: predecessor of %s: %w", me.Path, backends.ErrNoNode)
	var listed int64
	for below, first := me.Seq, true; below > 0; first = false {
		opts := rangeBelow(below, predecessorLimit)
		var kvs []*mvccpb.KeyValue
		if gone != "" {
			resp, err := s.cli.Txn(c).
				If(clientv3.Compare(clientv3.CreateRevision(companionOf(gone)), ">", 0),
					clientv3.Compare(clientv3.CreateRevision(gone), "=", 0)).
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
				s.learnReleased(gone)
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
		if first && !slices.ContainsFunc(kvs, func(kv *mvccpb.KeyValue) bool { return string(kv.Key) == me.Path }) {
			return backends.Node{Listed: listed}, false, lostMe
		}
		n, done, next := nearestBelow(parent, kvs, me.Seq, listed)
		if done {
			return n, n.Path != "", nil
		}
		below = next
	}
	return backends.Node{Listed: listed}, false, nil
}

// PredecessorOf is Predecessor among the children whose names start with
// prefix, in one read-only transaction:
//
//	If(CreateRevision(me) > 0)
//	Then(Get(parent/prefix.., created below me, newest first,
//	         limit predecessorLimit, keys only))
//
// The reply holds a few keys whatever the queue's length (O(1) bytes, as
// Predecessor's); the server walks the keys under the prefix in its index.
// A failed compare means me is gone (ErrNoNode). Keys that are no direct
// child are skipped, as by Predecessor.
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
		resp, err := s.cli.Txn(c).
			If(clientv3.Compare(clientv3.CreateRevision(me.Path), ">", 0)).
			Then(clientv3.OpGet(parent+"/"+prefix, rangeBelow(below, predecessorLimit)...)).
			Commit()
		if err != nil {
			return backends.Node{}, false, s.fail(ctx, "predecessor", parent, false, err)
		}
		if !resp.Succeeded {
			return backends.Node{}, false, fmt.Errorf("etcd: predecessor of %s: %w", me.Path, backends.ErrNoNode)
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		listed += keyNames(kvs)
		n, done, next := nearestBelow(parent, kvs, me.Seq, listed)
		if done {
			return n, n.Path != "", nil
		}
		below = next
	}
	return backends.Node{Listed: listed}, false, nil
}

// predecessorLimit is a predecessor range's limit: me, the node before me,
// their companions, and room for a dequeued node's lingering companion
// between them. It is above 2, the most keys one create revision holds, so
// a full reply always reaches below its first revision.
const predecessorLimit = 6

// rangeBelow are a predecessor range's options: keys only under a prefix,
// created at or below revision below, newest first, at most limit. The
// limit comes last: WithLastCreate sets a limit of 1 of its own.
func rangeBelow(below, limit int64) []clientv3.OpOption {
	opts := append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithMaxCreateRev(below)}, clientv3.WithLastCreate()...)
	return append(opts, clientv3.WithLimit(limit))
}

// nearestBelow reads a predecessor range's reply (newest first): done with
// the newest direct child of parent created below rev (Path empty if none),
// Listed set; or, when a full reply held none, not done, and the create
// revision to ask again at or below (its oldest: a node and its companion
// share a revision, and the limit may have cut between them).
func nearestBelow(parent string, kvs []*mvccpb.KeyValue, rev int64, listed int64) (n backends.Node, done bool, below int64) {
	for _, kv := range kvs {
		if kv.CreateRevision < rev && isDirectChild(parent, string(kv.Key)) {
			n = nodeOf(kv)
			n.Listed = listed
			return n, true, 0
		}
	}
	if len(kvs) < predecessorLimit {
		return backends.Node{Listed: listed}, true, 0
	}
	return backends.Node{}, false, kvs[len(kvs)-1].CreateRevision
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

// Dequeue deletes me and leaves its companion (see companionOf), which
// tells me's watcher and Predecessor that me left by Dequeue, in one
// transaction that also removes the companions this session no longer
// needs under the same parent:
//
//	If(CreateRevision(me) > 0)
//	Then(Delete(me),
//	     Delete(each companion of a predecessor this session learned was
//	            dequeued, by its watch or by Predecessor),
//	     Delete(the companion this session's last Dequeue left),
//	     Txn(If(Value(tail) == me) Then(Delete(me's companion))))
//
// The last: with no node enqueued after me, nobody watches me, and the
// companion goes too. So a queue whose nodes all left by Dequeue holds no
// key, and otherwise the companion of a dequeued node stays until its
// successor's own Dequeue (after a failure, until that session's next
// Dequeue under the parent, or its lease's end). One write and one event to
// me's watcher (ExistsW: EventDataChanged), as on ZooKeeper. etcd cannot
// mark and delete one key in one transaction (it refuses a put and a
// delete of one key), and a mark followed by the delete sends two events
// to a watcher whose cancel has not reached the server yet, so the mark is
// the companion that stays.
func (s *Session) Dequeue(ctx context.Context, me backends.Node) error {
	parent := path.Dir(me.Path)
	mine := companionOf(me.Path)
	ops := []clientv3.Op{clientv3.OpDelete(me.Path)}
	s.mu.Lock()
	for _, k := range s.stale[parent] {
		if k != mine {
			ops = append(ops, clientv3.OpDelete(k))
		}
	}
	s.mu.Unlock()
	ops = append(ops, clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Value(parent+tailSuffix), "=", me.Path)},
		[]clientv3.Op{clientv3.OpDelete(mine)}, nil))
	if err := s.ifExists(ctx, "dequeue", me.Path, ops...); err != nil {
		return err
	}
	s.mu.Lock()
	s.stale[parent] = []string{mine}
	s.mu.Unlock()
	return nil
}

// learnReleased notes that the Enqueue'd node p left by Dequeue, so that
// this session's next Dequeue under its parent removes p's companion.
func (s *Session) learnReleased(p string) {
	parent, c := path.Dir(p), companionOf(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.stale[parent], c) {
		s.stale[parent] = append(s.stale[parent], c)
	}
}
