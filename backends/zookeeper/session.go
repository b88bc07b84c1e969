package zookeeper

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// acl is the ACL of every node zkbench makes: open to all.
var acl = zk.WorldACL(zk.PermAll)

// Session is one ZooKeeper session (backends.Session). It is its own
// zk.Conn unless the Backend shares connections (Config.Conns > 0), in
// which case it is a view of a shared one.
//
// The session is over when it expires, when authentication fails, or when
// Close is called: Done closes, the connection is closed (never silently
// replaced by a new session, as go-zookeeper would), and every call returns
// backends.ErrSessionLost. Watches then deliver backends.EventSessionLost.
type Session struct {
	l      *link
	shared bool

	done    chan struct{}
	endOnce sync.Once

	closeOnce sync.Once
	onClose   func() // untracks the session from its Backend

	mu    sync.Mutex
	owned map[string]struct{} // ephemeral nodes made through this session (or view)

	late lateWatches // abandoned watches still received, and their events
}

var (
	_ backends.Session          = (*Session)(nil)
	_ backends.LateWatchCounter = (*Session)(nil)
)

func newSession(l *link, shared bool) *Session {
	s := &Session{l: l, shared: shared, done: make(chan struct{}), owned: make(map[string]struct{})}
	if !l.attach(s) {
		s.end()
	}
	return s
}

// Conn is the underlying go-zookeeper connection, for recipes that use the
// library's own primitives (recipes/native's zk.Lock). Calls made on it
// directly take no context and bypass this Session's loss handling.
func (s *Session) Conn() *zk.Conn { return s.l.conn }

// ID is the ZooKeeper session id (shared by views of one connection).
func (s *Session) ID() int64 { return s.l.id.Load() }

// Done is closed when the session is lost or closed.
func (s *Session) Done() <-chan struct{} { return s.done }

func (s *Session) end() { s.endOnce.Do(func() { close(s.done) }) }

func (s *Session) isOver() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// cause says why the session is over.
func (s *Session) cause() error {
	select {
	case <-s.l.lost:
		if errors.Is(s.l.cause, zk.ErrClosing) {
			return errors.New("closed")
		}
		return s.l.cause
	default:
		return errors.New("closed")
	}
}

// Close ends the session. On its own connection, it closes the connection
// and waits (at most about 5 s) for the server to end the session, which
// removes its ephemeral nodes. A shared view instead deletes the ephemeral
// nodes it made, then detaches. Safe to call more than once and
// concurrently with other methods, whose calls then return ErrSessionLost.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if s.shared {
			s.deleteOwned(ctx)
			s.end()
			s.l.detach(s)
		} else {
			s.l.shutdown(ctx)
			s.end()
		}
		s.late.close()
		if s.onClose != nil {
			s.onClose()
		}
	})
	return nil
}

// Timeout is the session timeout asked for (the server may grant another
// within its bounds, 2 to 20 ticks by default).
func (s *Session) Timeout() time.Duration { return s.l.timeout }

// ErrSharedCrash: Crash on a session that shares its connection.
var ErrSharedCrash = errors.New("zookeeper: a crash closes the session's connection, which this session shares with others: give each session its own (--conns 0)")

// Crash ends the session as its process dying would: the connection
// closes without a close request and nothing reconnects, so the server
// ends the session only when its timeout runs out, and its ephemeral
// nodes go then. Done closes now. It takes the place of Close: a Close
// before it leaves it nothing to do, one after it does nothing. A session
// sharing its connection cannot crash alone (CanCrash).
func (s *Session) Crash() error {
	if err := s.CanCrash(); err != nil {
		return err
	}
	s.closeOnce.Do(func() {
		s.l.crash()
		s.end()
		s.late.close()
		if s.onClose != nil {
			s.onClose()
		}
	})
	return nil
}

// CanCrash says why Crash cannot end this session alone (ErrSharedCrash),
// or nil.
func (s *Session) CanCrash() error {
	if s.shared {
		return ErrSharedCrash
	}
	return nil
}

// own records (or forgets) an ephemeral node the session made: a shared
// view's are deleted when it closes; a session's own are deleted by the
// server when it ends, and counted then (Witness.EndedNodes).
func (s *Session) own(path string, mine bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mine {
		s.owned[path] = struct{}{}
	} else {
		delete(s.owned, path)
	}
}

// deleteOwned removes a shared view's ephemeral nodes, best effort.
func (s *Session) deleteOwned(ctx context.Context) {
	s.mu.Lock()
	paths := make([]string, 0, len(s.owned))
	for p := range s.owned {
		paths = append(paths, p)
	}
	s.mu.Unlock()
	for _, p := range paths {
		_ = s.Delete(ctx, p)
	}
}

// ownedCount is how many ephemeral nodes the session made and has not
// deleted.
func (s *Session) ownedCount() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.owned))
}
