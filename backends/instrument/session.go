package instrument

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
)

// Session is a backends.Session that counts into its Counters.
type Session struct {
	inner backends.Session
	c     *Counters
	late  backends.LateWatchCounter // nil if the backend has no late events
}

var (
	_ backends.Session    = (*Session)(nil)
	_ backends.Updater    = (*Session)(nil)
	_ backends.Transactor = (*Session)(nil)
	_ backends.Committer  = (*Session)(nil)
)

// Wrap returns s counting into c. Wrapping an already wrapped session counts
// into both Counters. If the innermost session is a
// backends.LateWatchCounter, c's snapshots include its late watch events
// (Counts.LateWatchEvents), and keep its final count after Close.
func Wrap(s backends.Session, c *Counters) *Session {
	w := &Session{inner: s, c: c}
	if l, ok := Unwrap(s).(backends.LateWatchCounter); ok {
		w.late = l
		c.addLate(l)
	}
	return w
}

// Unwrap returns the session this one wraps.
func (s *Session) Unwrap() backends.Session { return s.inner }

// Counters returns the counters this session counts into.
func (s *Session) Counters() *Counters { return s.c }

// Unwrapper is a session decorator that can return what it decorates.
type Unwrapper interface {
	Unwrap() backends.Session
}

// Unwrap peels every decorator (any session with an Unwrap method) off s and
// returns the innermost session, or s itself if it is not wrapped. Code that
// needs a backend's concrete session type, such as a native-recipe baseline,
// calls it before its type assertion.
func Unwrap(s backends.Session) backends.Session {
	for {
		u, ok := s.(Unwrapper)
		if !ok {
			return s
		}
		s = u.Unwrap()
	}
}

// CountersOf returns the Counters of the outermost instrument wrapper in s's
// decorator chain, or nil if s is not instrumented.
func CountersOf(s backends.Session) *Counters {
	for {
		if w, ok := s.(*Session); ok {
			return w.c
		}
		u, ok := s.(Unwrapper)
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
}

// start counts a call of type op as a request sent with payload bytes,
// unless the backend will refuse it before any request goes out: ctx has
// already ended, or the session is over (lost or closed;
// backends.Session's contract: a call then returns at once). The servers
// never see a refused call, so the client's counts must not either. It
// says whether it counted.
func (s *Session) start(ctx context.Context, op Op, bytes int) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case <-s.inner.Done():
		return false
	default:
	}
	s.c.sent(op)
	s.c.bytesSent.Add(int64(bytes))
	return true
}

// done ends a call start counted (sent): a failure if err is set.
func (s *Session) done(op Op, sent bool, err error) {
	if !sent {
		return
	}
	s.c.inFlight[op].Add(-1)
	if err != nil {
		s.c.failures[op].Add(1)
	}
}

// Create counts OpCreate.
func (s *Session) Create(ctx context.Context, path string, data []byte) (backends.Node, error) {
	sent := s.start(ctx, OpCreate, len(path)+len(data))
	n, err := s.inner.Create(ctx, path, data)
	s.done(OpCreate, sent, err)
	return n, err
}

// CreateSequential counts OpCreateSeq.
func (s *Session) CreateSequential(ctx context.Context, parent, prefix string, data []byte) (backends.Node, error) {
	sent := s.start(ctx, OpCreateSeq, len(parent)+1+len(prefix)+len(data))
	n, err := s.inner.CreateSequential(ctx, parent, prefix, data)
	s.done(OpCreateSeq, sent, err)
	return n, err
}

// Get counts OpGet.
func (s *Session) Get(ctx context.Context, path string) ([]byte, backends.Node, error) {
	sent := s.start(ctx, OpGet, len(path))
	d, n, err := s.inner.Get(ctx, path)
	s.done(OpGet, sent, err)
	s.c.bytesReceived.Add(int64(len(d)))
	return d, n, err
}

// Delete counts OpDelete.
func (s *Session) Delete(ctx context.Context, path string) error {
	sent := s.start(ctx, OpDelete, len(path))
	err := s.inner.Delete(ctx, path)
	s.done(OpDelete, sent, err)
	return err
}

// Children counts OpChildren.
func (s *Session) Children(ctx context.Context, parent string) ([]backends.Node, error) {
	sent := s.start(ctx, OpChildren, len(parent))
	ns, err := s.inner.Children(ctx, parent)
	s.done(OpChildren, sent, err)
	s.c.bytesReceived.Add(names(ns))
	return ns, err
}

// Enqueue counts OpEnqueue; it sends the path it names, parent + "/" + tag
// (as CreateSequential's parent + "/" + prefix).
func (s *Session) Enqueue(ctx context.Context, parent, tag string) (backends.Node, error) {
	sent := s.start(ctx, OpEnqueue, len(parent)+1+len(tag))
	n, err := s.inner.Enqueue(ctx, parent, tag)
	s.done(OpEnqueue, sent, err)
	return n, err
}

// Predecessor counts OpPredecessor; it sends the parent's path.
func (s *Session) Predecessor(ctx context.Context, parent string, me backends.Node, gone string) (backends.Node, bool, error) {
	sent := s.start(ctx, OpPredecessor, len(parent))
	n, ok, err := s.inner.Predecessor(ctx, parent, me, gone)
	s.c.bytesReceived.Add(n.Listed)
	s.done(OpPredecessor, sent, err)
	return n, ok, err
}

// PredecessorOf counts OpPredecessor: the same query, among fewer children
// (it sends parent + "/" + prefix).
func (s *Session) PredecessorOf(ctx context.Context, parent, prefix string, me backends.Node) (backends.Node, bool, error) {
	sent := s.start(ctx, OpPredecessor, len(parent)+1+len(prefix))
	n, ok, err := s.inner.PredecessorOf(ctx, parent, prefix, me)
	s.c.bytesReceived.Add(n.Listed)
	s.done(OpPredecessor, sent, err)
	return n, ok, err
}

// Tagged counts OpTagged once per call, however many server requests the
// backend needs for it (ZooKeeper: a listing and a read per child); it sends
// parent + "/" + tag once.
func (s *Session) Tagged(ctx context.Context, parent, tag string) ([]backends.Node, error) {
	sent := s.start(ctx, OpTagged, len(parent)+1+len(tag))
	ns, err := s.inner.Tagged(ctx, parent, tag)
	s.done(OpTagged, sent, err)
	return ns, err
}

// Dequeue counts OpDequeue; it sends the node's path.
func (s *Session) Dequeue(ctx context.Context, me backends.Node) error {
	sent := s.start(ctx, OpDequeue, len(me.Path))
	err := s.inner.Dequeue(ctx, me)
	s.done(OpDequeue, sent, err)
	return err
}

// Update counts OpUpdate (backends.Updater), forwarding to the wrapped session;
// one that cannot set data returns an error matching errors.ErrUnsupported,
// counted as a failed request.
func (s *Session) Update(ctx context.Context, path string, data []byte) error {
	sent := s.start(ctx, OpUpdate, len(path)+len(data))
	var err error
	if st, ok := s.inner.(backends.Updater); ok {
		err = st.Update(ctx, path, data)
	} else {
		err = fmt.Errorf("instrument: set %s: %T cannot set data: %w", path, s.inner, errors.ErrUnsupported)
	}
	s.done(OpUpdate, sent, err)
	return err
}

// SetIf counts OpSetIf (backends.Transactor), one write however many nodes
// it writes, forwarding to the wrapped session; one that cannot returns an
// error matching errors.ErrUnsupported, counted as a failed request.
func (s *Session) SetIf(ctx context.Context, guard string, want []byte, writes []backends.Write) (bool, error) {
	n := len(guard) + len(want)
	for _, w := range writes {
		n += len(w.Path) + len(w.Data)
	}
	sent := s.start(ctx, OpSetIf, n)
	var (
		done bool
		err  error
	)
	if tx, ok := s.inner.(backends.Transactor); ok {
		done, err = tx.SetIf(ctx, guard, want, writes)
	} else {
		err = fmt.Errorf("instrument: set-if %s: %T cannot write in a transaction: %w", guard, s.inner, errors.ErrUnsupported)
	}
	s.done(OpSetIf, sent, err)
	return done, err
}

// ChildrenVersion counts OpChildrenVersion (backends.Committer), one read,
// forwarding to the wrapped session; one that cannot returns an error
// matching errors.ErrUnsupported, counted as a failed request.
func (s *Session) ChildrenVersion(ctx context.Context, parent string) ([]backends.Node, int64, error) {
	sent := s.start(ctx, OpChildrenVersion, len(parent))
	var (
		ns      []backends.Node
		version int64
		err     error
	)
	if cm, ok := s.inner.(backends.Committer); ok {
		ns, version, err = cm.ChildrenVersion(ctx, parent)
	} else {
		err = fmt.Errorf("instrument: children-version %s: %T cannot commit: %w", parent, s.inner, errors.ErrUnsupported)
	}
	s.done(OpChildrenVersion, sent, err)
	s.c.bytesReceived.Add(names(ns))
	return ns, version, err
}

// Commit counts OpCommit (backends.Committer), one write however many ops
// it holds, forwarding to the wrapped session; one that cannot returns an
// error matching errors.ErrUnsupported, counted as a failed request.
func (s *Session) Commit(ctx context.Context, ops ...backends.Op) ([]backends.Node, error) {
	var n int
	for _, o := range ops {
		n += len(o.Path) + len(o.Prefix) + len(o.Data)
	}
	sent := s.start(ctx, OpCommit, n)
	var (
		made []backends.Node
		err  error
	)
	if cm, ok := s.inner.(backends.Committer); ok {
		made, err = cm.Commit(ctx, ops...)
	} else {
		err = fmt.Errorf("instrument: commit: %T cannot commit: %w", s.inner, errors.ErrUnsupported)
	}
	s.done(OpCommit, sent, err)
	return made, err
}

// EnsurePath counts OpEnsurePath once per call, however many server
// requests the backend needs for it.
func (s *Session) EnsurePath(ctx context.Context, path string) error {
	sent := s.start(ctx, OpEnsurePath, len(path))
	err := s.inner.EnsurePath(ctx, path)
	s.done(OpEnsurePath, sent, err)
	return err
}

// Set counts OpSet.
func (s *Session) Set(ctx context.Context, path string, data []byte) error {
	sent := s.start(ctx, OpSet, len(path)+len(data))
	err := s.inner.Set(ctx, path, data)
	s.done(OpSet, sent, err)
	return err
}

// WatchData counts OpWatchData, one watch armed, the data it read and
// each event with its data, if the inner session is a
// backends.DataWatcher; else it returns backends.ErrNoDataWatch.
func (s *Session) WatchData(ctx context.Context, path string) ([]byte, bool, <-chan backends.Event, error) {
	dw, ok := s.inner.(backends.DataWatcher)
	if !ok {
		return nil, false, nil, backends.ErrNoDataWatch
	}
	sent := s.start(ctx, OpWatchData, len(path))
	data, exists, ch, err := dw.WatchData(ctx, path)
	s.done(OpWatchData, sent, err)
	s.c.bytesReceived.Add(int64(len(data)))
	if err != nil {
		return data, exists, ch, err
	}
	s.c.watchesArmed.Add(1)
	s.c.watchesOpen.Add(1)
	out := make(chan backends.Event, cap(ch))
	go func() {
		defer close(out)
		defer s.c.watchesOpen.Add(-1)
		for ev := range ch {
			s.event(ev)
			select {
			case out <- ev:
			case <-ctx.Done():
				// The inner stream closes once ctx is done; drain it.
			}
		}
	}()
	return data, exists, out, nil
}

// ExistsW counts OpExistsW and, if it returns a channel, one watch armed and
// the event it delivers.
func (s *Session) ExistsW(ctx context.Context, path string) (bool, backends.Node, <-chan backends.Event, error) {
	sent := s.start(ctx, OpExistsW, len(path))
	ok, n, ch, err := s.inner.ExistsW(ctx, path)
	s.done(OpExistsW, sent, err)
	if err != nil {
		return ok, n, ch, err
	}
	return ok, n, s.forward(ch), nil
}

// ChildrenW counts OpChildrenW and, if it returns a channel, one watch armed
// and the event it delivers.
func (s *Session) ChildrenW(ctx context.Context, parent string) ([]backends.Node, <-chan backends.Event, error) {
	sent := s.start(ctx, OpChildrenW, len(parent))
	ns, ch, err := s.inner.ChildrenW(ctx, parent)
	s.done(OpChildrenW, sent, err)
	s.c.bytesReceived.Add(names(ns))
	if err != nil {
		return ns, ch, err
	}
	return ns, s.forward(ch), nil
}

// forward counts the watch and relays in's events to the returned channel,
// counting each when it arrives from the backend (not when the caller reads
// it), before it puts it in the channel: whoever received an event finds it
// counted, and its arrival time in LastWatchEvent. The watch stops being
// open before the channel closes: whoever finds the channel closed finds the
// watch ended, and whoever finds no watch open can receive every event
// without waiting. The goroutine ends when in closes; the contract closes in
// after its event or when the watch's ctx ends. The relay channel has room
// for the one event the contract allows, so the goroutine never waits for a
// reader that stopped listening.
func (s *Session) forward(in <-chan backends.Event) <-chan backends.Event {
	s.c.watchesArmed.Add(1)
	if in == nil {
		return nil
	}
	s.c.watchesOpen.Add(1)
	out := make(chan backends.Event, 1)
	go func() {
		defer close(out)
		defer s.c.watchesOpen.Add(-1)
		for ev := range in {
			s.event(ev)
			out <- ev
		}
	}()
	return out
}

// event counts a watch event delivered by the backend: a session-lost
// report, or a notification with its path and the data it carries.
func (s *Session) event(ev backends.Event) {
	if ev.Type == backends.EventSessionLost {
		s.c.sessionLostEvents.Add(1)
		return
	}
	s.c.watchEvent()
	s.c.bytesReceived.Add(int64(len(ev.Path) + len(ev.Data)))
}

// names is the payload of a listing: its names' bytes.
func names(ns []backends.Node) int64 {
	var n int64
	for _, x := range ns {
		n += int64(len(x.Name))
	}
	return n
}

// ID returns the inner session's ID.
func (s *Session) ID() int64 { return s.inner.ID() }

// Done returns the inner session's Done.
func (s *Session) Done() <-chan struct{} { return s.inner.Done() }

// Close closes the inner session and keeps its final late watch events.
func (s *Session) Close() error {
	err := s.inner.Close()
	if s.late != nil {
		s.c.closeLate(s.late)
	}
	return err
}
