package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// ErrReplyTooLarge: a reply (a getChildren listing) did not fit the
// connection's receive buffer; raise Config.RecvBufferSize or MaxChildren.
var ErrReplyTooLarge = errors.New("zookeeper: reply larger than the receive buffer")

// errTransient marks a call that failed because the connection dropped
// while the session lives on. Reads retry it; writes report
// backends.ErrUnknownOutcome unless the request was provably never sent.
var errTransient = errors.New("zookeeper: connection lost, session alive")

type result[T any] struct {
	v   T
	err error
}

// call runs fn (a go-zookeeper call, which takes no context) on its own
// goroutine and returns its result, or ctx's error when ctx ends first, or
// errSessionOver when done closes first. The goroutine ends when
// go-zookeeper answers: with the reply, or with an error when the
// connection fails or is closed.
func call[T any](ctx context.Context, done <-chan struct{}, fn func() (T, error)) (T, error) {
	var zero T
	select {
	case <-done:
		return zero, errSessionOver
	default:
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	ch := make(chan result[T], 1)
	go func() {
		v, err := fn()
		ch <- result[T]{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-done:
		return zero, errSessionOver
	}
}

// errSessionOver: the session view ended (lost or closed) during a call.
var errSessionOver = errors.New("zookeeper: session over")

// classify maps a go-zookeeper error to the backends sentinels, wrapped
// with the operation and path. A transient failure is wrapped around
// errTransient and the original error.
func (s *Session) classify(op, path string, err error) error {
	if err == nil {
		return nil
	}
	where := "zookeeper: " + op + " " + path
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", where, err)
	case errors.Is(err, zk.ErrNodeExists):
		return fmt.Errorf("%s: %w", where, backends.ErrNodeExists)
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%s: %w", where, backends.ErrNoNode)
	case s.isOver(), errors.Is(err, errSessionOver), errors.Is(err, zk.ErrSessionExpired),
		errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrAuthFailed), errors.Is(err, errLinkLost):
		return fmt.Errorf("%s: %w (%v)", where, backends.ErrSessionLost, s.cause())
	case isTransient(err):
		return fmt.Errorf("%s: %w: %w", where, errTransient, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// isTransient: the connection failed, not the request.
func isTransient(err error) bool {
	var ne net.Error
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.As(err, &ne) || errors.Is(err, os.ErrDeadlineExceeded)
}

// neverSent: go-zookeeper flushed the request from its queue unsent
// (every server failed to connect), so a write can safely be retried.
func neverSent(err error) bool { return errors.Is(err, zk.ErrNoServer) }

// read runs a read, retrying it while the connection is down and the
// session alive, until ctx ends or the session is lost.
func read[T any](ctx context.Context, s *Session, op, path string, fn func() (T, error)) (T, error) {
	backoff := 10 * time.Millisecond
	for {
		v, err := call(ctx, s.done, fn)
		err = s.classify(op, path, err)
		if !errors.Is(err, errTransient) {
			return v, err
		}
		if msg := s.l.tooLarge.Swap(nil); msg != nil {
			return v, fmt.Errorf("zookeeper: %s %s: %w (%s): raise Config.RecvBufferSize or Config.MaxChildren",
				op, path, ErrReplyTooLarge, strings.TrimPrefix(*msg, "recv loop terminated: "))
		}
		if err := s.pause(ctx, backoff); err != nil {
			return v, s.classify(op, path, err)
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// write runs a write once. A connection loss after the request may have
// been sent is backends.ErrUnknownOutcome; before, the write is retried.
func write[T any](ctx context.Context, s *Session, op, path string, fn func() (T, error)) (T, error) {
	backoff := 10 * time.Millisecond
	for {
		v, raw := call(ctx, s.done, fn)
		err := s.classify(op, path, raw)
		if !errors.Is(err, errTransient) {
			return v, err
		}
		if !neverSent(raw) {
			return v, fmt.Errorf("zookeeper: %s %s: %w: %w", op, path, backends.ErrUnknownOutcome, raw)
		}
		if err := s.pause(ctx, backoff); err != nil {
			return v, s.classify(op, path, err)
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// pause sleeps d unless ctx ends or the session does.
func (s *Session) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return errSessionOver
	}
}
