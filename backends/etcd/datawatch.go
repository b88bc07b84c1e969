package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

var _ backends.DataWatcher = (*Session)(nil)

// Set puts path without a lease: a persistent key that outlives the
// session, created if absent. One write.
func (s *Session) Set(ctx context.Context, p string, data []byte) error {
	c, stop, err := s.callAt(ctx, p)
	if err != nil {
		return err
	}
	defer stop()
	if _, err := s.cli.Put(c, p, string(data)); err != nil {
		return s.fail(ctx, "set", p, true, err)
	}
	return nil
}

// WatchData reads path at revision G and follows it with one watch stream
// from G+1 (backends.DataWatcher): every put arrives with its value, in
// revision order, one notification a change and no read. It returns once
// the server has confirmed the stream (a created response), so a caller
// that counts the servers' watches after it finds this one there. The stream is
// etcd's own: a broken connection makes clientv3 resume it from the next
// unseen revision, so a disconnect is no event. If the server cancels
// the watch (no leader) it is armed again from the next unseen revision;
// if that revision was compacted, the key is read again and reported as
// one change if it moved.
func (s *Session) WatchData(ctx context.Context, p string) ([]byte, bool, <-chan backends.Event, error) {
	if err := checkPath(p); err != nil {
		return nil, false, nil, err
	}
	data, modRev, rev, err := s.readKey(ctx, p)
	if err != nil {
		return nil, false, nil, s.fail(ctx, "watch-data", p, false, err)
	}
	out := make(chan backends.Event, 16)
	armed := make(chan struct{})
	go s.followData(ctx, p, modRev, rev+1, out, armed)
	select {
	case <-armed:
	case <-ctx.Done():
		return nil, false, nil, ctx.Err()
	}
	return data, modRev != 0, out, nil
}

// readKey reads p: its value, its mod revision (0 if absent) and the
// revision of the read.
func (s *Session) readKey(ctx context.Context, p string) ([]byte, int64, int64, error) {
	c, stop, err := s.call(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	defer stop()
	resp, err := s.cli.Get(c, p)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, resp.Header.Revision, nil
	}
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision, resp.Header.Revision, nil
}

// followData forwards p's changes from revision next to out until ctx or
// the session ends; modRev is the last version reported. It closes armed
// when the server confirms the first watch, or when it gives up before.
func (s *Session) followData(ctx context.Context, p string, modRev, next int64, out chan<- backends.Event, armed chan struct{}) {
	defer close(out)
	var confirm sync.Once
	confirmed := func() { confirm.Do(func() { close(armed) }) }
	defer confirmed()
	base, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	stopLost := context.AfterFunc(s.ctx, cancel)
	defer stopLost()
	send := func(ev backends.Event) bool {
		select {
		case out <- ev:
			return true
		case <-base.Done():
			return false
		}
	}
	wait := 20 * time.Millisecond
	for {
		wctx, wcancel := context.WithCancel(base)
		compacted := false
		for resp := range s.cli.Watch(wctx, p, clientv3.WithRev(next), clientv3.WithCreatedNotify()) {
			if resp.CompactRevision != 0 {
				compacted = true
				break
			}
			if resp.Err() != nil {
				break
			}
			if resp.Created {
				confirmed()
				continue
			}
			for _, ev := range resp.Events {
				next = ev.Kv.ModRevision + 1
				e := backends.Event{Path: p, Type: backends.EventDataChanged, Data: ev.Kv.Value}
				switch {
				case ev.Type == clientv3.EventTypeDelete:
					e = backends.Event{Path: p, Type: backends.EventDeleted}
					modRev = 0
				case ev.IsCreate():
					e.Type, modRev = backends.EventCreated, ev.Kv.ModRevision
				default:
					modRev = ev.Kv.ModRevision
				}
				if !send(e) {
					wcancel()
					return
				}
			}
		}
		wcancel()
		switch {
		case ctx.Err() != nil:
			return
		case s.ctx.Err() != nil:
			// base is done with the session: wait on the caller's ctx only.
			select {
			case out <- backends.Event{Type: backends.EventSessionLost, Path: p}:
			case <-ctx.Done():
			}
			return
		case compacted:
			data, mr, rev, err := s.readKey(base, p)
			if err == nil {
				if mr != modRev {
					e := backends.Event{Path: p, Type: backends.EventDataChanged, Data: data}
					if mr == 0 {
						e = backends.Event{Path: p, Type: backends.EventDeleted}
					}
					modRev = mr
					if !send(e) {
						return
					}
				}
				next = rev + 1
				continue
			}
		}
		wait = backOff(base, wait)
	}
}

var _ backends.Transactor = (*Session)(nil)

// SetIf is one transaction: If(Value(guard) == want) — or, for a nil want,
// If(CreateRevision(guard) == 0) — Then a Put of each write (no lease).
func (s *Session) SetIf(ctx context.Context, guard string, want []byte, writes []backends.Write) (bool, error) {
	for _, w := range writes {
		if err := checkPath(w.Path); err != nil {
			return false, err
		}
	}
	c, stop, err := s.callAt(ctx, guard)
	if err != nil {
		return false, err
	}
	defer stop()
	cmp := clientv3.Compare(clientv3.Value(guard), "=", string(want))
	if want == nil {
		cmp = clientv3.Compare(clientv3.CreateRevision(guard), "=", 0)
	}
	ops := make([]clientv3.Op, len(writes))
	for i, w := range writes {
		ops[i] = clientv3.OpPut(w.Path, string(w.Data))
	}
	resp, err := s.cli.Txn(c).If(cmp).Then(ops...).Commit()
	if err != nil {
		return false, s.fail(ctx, "set-if", guard, true, err)
	}
	return resp.Succeeded, nil
}
