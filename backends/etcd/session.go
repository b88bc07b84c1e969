package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/ctxsleep"
)

// Session is one lease kept alive: zkbench's etcd session. Every key it
// creates carries the lease, so the server deletes them when the lease ends.
//
// Done closes when the server answered a keep-alive with "lease not found"
// (revoked, or expired), or no keep-alive was answered for a whole TTL (see
// keeper), or Close was called. Like
// concurrency.Session.Done, it therefore closes after the lease is already
// gone or about to go — up to TTL/3 after a revoke by someone else, up to a
// TTL plus a second after the cluster became unreachable — never before: a
// recipe must not treat "Done not closed" as "still own my keys" without a
// fencing token (Node.CreateRev).
type Session struct {
	b     *Backend
	cli   *clientv3.Client
	owns  bool // close cli on Close
	lease clientv3.LeaseID
	ttl   time.Duration // the lease's TTL as granted
	tag   string        // per-session unique part of sequential names
	seq   atomic.Int64

	// ctx is cancelled when the session is lost or closed; it stops the
	// keepalive and every call and watch still running.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	loseMu sync.Once

	closeOnce sync.Once
	closeErr  error

	// stale holds, by parent, the companions of dequeued nodes that this
	// session's next Dequeue under the parent removes (see Dequeue): its
	// own last one and those of predecessors it learned were dequeued.
	mu    sync.Mutex
	stale map[string][]string

	// anchorCh is the session's anchor watch (see anchor), nil before its
	// first watch and after the server ended it.
	anchorMu sync.Mutex
	anchorCh clientv3.WatchChan
}

func openSession(ctx context.Context, b *Backend, cli *clientv3.Client, owns bool) (*Session, error) {
	g, err := cli.Grant(ctx, b.cfg.ttlSeconds())
	if err != nil {
		return nil, fmt.Errorf("etcd: grant lease: %w", clientv3.ContextError(ctx, err))
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		b: b, cli: cli, owns: owns, lease: g.ID, ttl: time.Duration(g.TTL) * time.Second,
		tag: fmt.Sprintf("%016x", int64(g.ID)),
		ctx: sctx, cancel: cancel, done: make(chan struct{}),
		stale: make(map[string][]string),
	}
	if err := startKeeper(s, b.keepAlives, time.Duration(g.TTL)*time.Second); err != nil {
		cancel()
		rctx, rcancel := context.WithTimeout(context.Background(), b.opts.closeTimeout)
		cli.Revoke(rctx, g.ID)
		rcancel()
		return nil, fmt.Errorf("etcd: keep lease %x alive: %w", int64(g.ID), err)
	}
	return s, nil
}

// lose marks the session unusable: Done closes, calls and watches end.
func (s *Session) lose() {
	s.loseMu.Do(func() {
		s.cancel()
		close(s.done)
	})
}

// ID returns the lease id.
func (s *Session) ID() int64 { return int64(s.lease) }

// Timeout is the lease's TTL as the server granted it.
func (s *Session) Timeout() time.Duration { return s.ttl }

// Lease returns the session's lease, for recipes built on
// go.etcd.io/etcd/client/v3/concurrency (concurrency.WithLease).
func (s *Session) Lease() clientv3.LeaseID { return s.lease }

// Client returns the session's client (shared with other sessions when
// Config.Conns > 0). Do not close it: Session.Close does.
func (s *Session) Client() *clientv3.Client { return s.cli }

// Done is closed when the session is lost or closed (see Session).
func (s *Session) Done() <-chan struct{} { return s.done }

// Crash ends the session as its process dying would: the keep-alive and
// every call and watch stop, and the session's own client closes, but the
// lease is not revoked: the server ends it when its TTL runs out with no
// keep-alive (and deletes its keys then). Done closes now. It takes the
// place of Close: a Close before it leaves it nothing to do (the lease is
// revoked), one after it revokes nothing. Over a shared client
// (Config.Conns > 0) only the session's own streams stop.
func (s *Session) Crash() error {
	s.closeOnce.Do(func() {
		s.lose()
		if s.owns {
			s.cli.Close()
		}
		s.b.forget(s)
	})
	return nil
}

// Close stops the keepalive, revokes the lease on a fresh context bounded by
// WithCloseTimeout (so the server removes the session's keys now, not a TTL
// later), and closes the session's own client. Calls still running return
// ErrSessionLost. Safe to call more than once and concurrently; later calls
// return the first call's result.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.lose()
		ctx, cancel := context.WithTimeout(context.Background(), s.b.opts.closeTimeout)
		defer cancel()
		_, err := s.cli.Revoke(ctx, s.lease)
		if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			s.closeErr = fmt.Errorf("etcd: revoke lease %x: %w", int64(s.lease), err)
		}
		if s.owns {
			s.cli.Close()
		}
		s.b.forget(s)
	})
	return s.closeErr
}

// call derives the context of one request: done when ctx is done or the
// session is lost. stop must be called when the request returns.
func (s *Session) call(ctx context.Context) (context.Context, func(), error) {
	if s.ctx.Err() != nil {
		return nil, nil, backends.ErrSessionLost
	}
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return c, func() { stop(); cancel() }, nil
}

// callAt is call for a request on path p, which it checks first
// (ErrInvalidPath).
func (s *Session) callAt(ctx context.Context, p string) (context.Context, func(), error) {
	if err := checkPath(p); err != nil {
		return nil, nil, err
	}
	return s.call(ctx)
}

// backOff sleeps wait, or until ctx ends, between two tries of a request
// or a watch, and returns the next wait: doubled, at most a second.
func backOff(ctx context.Context, wait time.Duration) time.Duration {
	ctxsleep.Sleep(ctx, wait)
	return min(2*wait, time.Second)
}

// fail maps a client error to zkbench's sentinels; ctx is the caller's. write says whether the
// request may have changed state, so that an unknown outcome is reported.
func (s *Session) fail(ctx context.Context, op, path string, write bool, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		s.lose()
		return fmt.Errorf("etcd: %s %s: %w", op, path, backends.ErrSessionLost)
	case s.ctx.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("etcd: %s %s: %w", op, path, backends.ErrSessionLost)
	case ctx.Err() != nil:
		if write {
			return fmt.Errorf("etcd: %s %s: %w (%w)", op, path, ctx.Err(), backends.ErrUnknownOutcome)
		}
		return fmt.Errorf("etcd: %s %s: %w", op, path, ctx.Err())
	case write && unknownOutcome(err):
		return fmt.Errorf("etcd: %s %s: %w: %v", op, path, backends.ErrUnknownOutcome, err)
	}
	return fmt.Errorf("etcd: %s %s: %w", op, path, err)
}

// unknownOutcome reports errors after which a write may or may not have been
// applied: the connection broke, or the server timed out waiting for raft.
func unknownOutcome(err error) bool {
	if errors.Is(err, rpctypes.ErrTimeout) || errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost) ||
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail) || errors.Is(err, rpctypes.ErrTimeoutWaitAppliedIndex) {
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return false // the server refused the request: nothing was applied
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown, codes.Internal:
		return true
	}
	return false
}
