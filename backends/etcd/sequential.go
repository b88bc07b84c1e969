package etcd

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

// CreateSequential creates parent/<prefix><tag>-<n> with the session's
// lease, where tag is the lease id in hex (unique to this session) and n
// counts this session's sequential creates. Siblings are ordered by create
// revision: Node.Seq is the key's create revision, which is also its fencing
// token.
//
// Names are protected. The create is the transaction
// If(CreateRevision(key) == 0) Then Put Else Get, and the key is fixed
// before the first try, so when the outcome is unknown (connection lost,
// raft timeout) it is simply sent again: if the first try had landed, the
// Else branch returns the key holding this session's lease and that node is
// returned. No retry can make a second node.
//
// On a ctx marked backends.NoResend the transaction is not sent again
// after a lost reply: the key is read instead (findSequential), since
// another session may have removed the node meanwhile and a second try
// would make it again.
//
// Cancelling ctx stops the retries. If a try may have landed, the key is
// then deleted (only if it holds this session's lease) on a fresh context
// bounded by WithCloseTimeout, so that an abandoned node does not sit in a
// queue of waiters until the session ends. If that cleanup fails too, the
// error also matches backends.ErrUnknownOutcome.
func (s *Session) CreateSequential(ctx context.Context, parent, prefix string, data []byte) (backends.Node, error) {
	return s.createSequential(ctx, parent, prefix, data, s.putIfAbsent, s.sequentialResult)
}

// sequentialKey is the key of this session's next sequential node under
// parent: parent/<prefix><tag>-<n>, n counting the session's sequential
// creates (CreateSequential's and Commit's OpCreate).
func (s *Session) sequentialKey(parent, prefix string) string {
	return fmt.Sprintf("%s/%s%s-%010d", parent, prefix, s.tag, s.seq.Add(1))
}

// createSequential is CreateSequential with the create transaction and the
// reading of its answer given (Enqueue's also moves the queue's tail).
func (s *Session) createSequential(ctx context.Context, parent, prefix string, data []byte,
	put func(ctx context.Context, key string, data []byte) (*clientv3.TxnResponse, error),
	result func(key string, resp *clientv3.TxnResponse) (backends.Node, error)) (backends.Node, error) {
	if err := checkPath(parent); err != nil {
		return backends.Node{}, err
	}
	if strings.Contains(prefix, "/") {
		return backends.Node{}, fmt.Errorf("%w: sequential prefix %q holds a '/'", ErrInvalidPath, prefix)
	}
	key := s.sequentialKey(parent, prefix)
	c, stop, err := s.call(ctx)
	if err != nil {
		return backends.Node{}, err
	}
	defer stop()

	sent := false // a try may have reached the server
	wait := 10 * time.Millisecond
	for {
		resp, err := put(c, key, data)
		if err == nil {
			return result(key, resp)
		}
		ferr := s.fail(ctx, "create-sequential", key, true, err)
		if !errors.Is(ferr, backends.ErrUnknownOutcome) {
			return backends.Node{}, ferr
		}
		sent = true
		if c.Err() != nil {
			break
		}
		if !backends.Resends(ctx) {
			return s.findSequential(c, key, ferr)
		}
		wait = backOff(c, wait)
	}
	if s.ctx.Err() != nil && ctx.Err() == nil {
		return backends.Node{}, fmt.Errorf("etcd: create-sequential %s: %w", key, backends.ErrSessionLost)
	}
	if sent {
		if err := s.deleteIfMine(key); err != nil {
			return backends.Node{}, fmt.Errorf("etcd: create-sequential %s: %w (%w; cleanup: %v)", key, ctx.Err(), backends.ErrUnknownOutcome, err)
		}
	}
	return backends.Node{}, fmt.Errorf("etcd: create-sequential %s: %w", key, ctx.Err())
}

// findSequential looks for key, which a create whose reply was lost
// (lost, matching ErrUnknownOutcome) may have made, on a ctx marked
// backends.NoResend: the node if it holds this session's lease, else lost.
// Reads are linearizable, so a try that landed is seen, unless it was
// removed since; one still in flight may land after the look.
func (s *Session) findSequential(c context.Context, key string, lost error) (backends.Node, error) {
	wait := 10 * time.Millisecond
	for {
		resp, err := s.cli.Get(c, key)
		switch {
		case err == nil && len(resp.Kvs) > 0 && resp.Kvs[0].Lease == int64(s.lease):
			return nodeOf(resp.Kvs[0]), nil
		case err == nil || c.Err() != nil:
			return backends.Node{}, lost
		}
		wait = backOff(c, wait)
	}
}

// sequentialResult reads the create transaction's answer.
func (s *Session) sequentialResult(key string, resp *clientv3.TxnResponse) (backends.Node, error) {
	if resp.Succeeded {
		rev := resp.Header.Revision
		return backends.Node{Path: key, Name: path.Base(key), Seq: rev, CreateRev: rev}, nil
	}
	if len(resp.Responses) > 0 {
		if r := resp.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) > 0 && r.Kvs[0].Lease == int64(s.lease) {
			return nodeOf(r.Kvs[0]), nil // an earlier try landed
		}
	}
	// Only possible if someone else wrote a key with this session's tag.
	return backends.Node{}, fmt.Errorf("etcd: create-sequential %s: %w", key, backends.ErrNodeExists)
}

// deleteIfMine deletes key if it holds this session's lease.
func (s *Session) deleteIfMine(key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.b.opts.closeTimeout)
	defer cancel()
	_, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(key), "=", s.lease)).
		Then(clientv3.OpDelete(key, clientv3.WithRange(companionEnd(key)))).
		Commit()
	return err
}
