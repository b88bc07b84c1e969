package zk

// Persistent watches (ZooKeeper 3.6+), added to the v1.0.4 copy by zkbench.
//
// What was checked, in ZooKeeper's branch-3.8 source and against the
// Debian 3.8.0 server the tests run:
//
//   - ZooDefs.OpCode: removeWatches = 18, setWatches2 = 105, addWatch = 106;
//     ZooDefs.AddWatchModes: persistent = 0, persistentRecursive = 1.
//   - zookeeper.jute: AddWatchRequest {ustring path; int mode},
//     RemoveWatchesRequest {ustring path; int type}, SetWatches2 {long
//     relativeZxid; vector<ustring> dataWatches, existWatches, childWatches,
//     persistentWatches, persistentRecursiveWatches}.
//   - FinalRequestProcessor: addWatch answers ErrorResponse(0) (a 4-byte
//     body, ignored here); removeWatches maps its type with
//     Watcher.WatcherType.fromInt, which in 3.8 knows only 1 children,
//     2 data, 3 any: types 4 persistent and 5 persistent recursive exist
//     from 3.9 on, and a 3.8 server answers them with MARSHALLINGERROR.
//     RemovePersistentWatch then falls back to 3 (any), which in 3.8
//     removes the connection's watch on the path whatever its mode.
//   - WatchManager.triggerWatch: a persistent watch is not removed when it
//     fires; a recursive one fires for its path and every descendant, but
//     never with NodeChildrenChanged; the watchers of one event are a set,
//     so a connection gets one notification an event however many of its
//     watches match, and the client routes it to each of them.
//   - WatcherModeManager (3.8): one mode per connection and path. Arming
//     a one-shot watch (exists, getData, getChildren with watch) on a path
//     that has a persistent watch from the same connection turns it back
//     into a one-shot watch, and a persistent and a recursive watch on the
//     same path are one watch with the last mode (the client re-adds the
//     persistent watch after such a one-shot watch: see
//     oneShotBesidePersistent). Measured on the 3.8.0 server: a
//     persistent watch then an exists watch on its path, from one
//     connection, and three changes: the persistent watch got the first
//     only. Do not mix a persistent and a recursive watch on one path
//     on one Conn against a 3.8 server.
//   - DataTree.setWatches: persistent and recursive watches are added again
//     as they are, with no event for changes made while the client was
//     away (one-shot watches get one when the node moved past
//     relativeZxid). The client therefore sends EventWatchRestored on each
//     persistent watch once the server has re-added it.

import (
	"errors"
	"strings"
	"sync"
)

// AddWatchMode is the mode of a persistent watch (AddWatchRequest.mode).
type AddWatchMode int32

const (
	// AddWatchModePersistent watches one node: its creation, data
	// changes, deletion and the changes of its children list
	// (NodeChildrenChanged), and stays armed.
	AddWatchModePersistent AddWatchMode = 0
	// AddWatchModePersistentRecursive watches a node and all its
	// descendants: their creation, data changes and deletion (never
	// NodeChildrenChanged), and stays armed.
	AddWatchModePersistentRecursive AddWatchMode = 1
)

// removeWatches watcher types (Watcher.WatcherType).
const (
	watcherTypeAny                 int32 = 3
	watcherTypePersistent          int32 = 4 // ZooKeeper 3.9+
	watcherTypePersistentRecursive int32 = 5 // ZooKeeper 3.9+
)

// ErrNotPersistentWatch: RemovePersistentWatch was given a channel that is
// not (or no longer) a persistent watch of this Conn.
var ErrNotPersistentWatch = errors.New("zk: not a persistent watch of this connection")

// persistentWatch is one AddPersistentWatch registration. The receive
// loop queues its events (push never blocks); its own goroutine (pump)
// hands them to out in the order they were queued.
type persistentWatch struct {
	path string
	mode AddWatchMode
	out  chan Event

	mu    sync.Mutex
	queue []Event
	final bool // nothing more is queued; out closes after the queue

	wake chan struct{} // a nudge to pump, capacity 1
	stop chan struct{} // closed by removal: drop the queue, close out
	done chan struct{} // closed once out is closed
}

func newPersistentWatch(path string, mode AddWatchMode) *persistentWatch {
	w := &persistentWatch{
		path: path,
		mode: mode,
		out:  make(chan Event),
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go w.pump()
	return w
}

// matches: ev (a node event) is for this watch.
func (w *persistentWatch) matches(ev Event) bool {
	if w.mode == AddWatchModePersistent {
		return ev.Path == w.path
	}
	if ev.Type == EventNodeChildrenChanged {
		return false
	}
	return ev.Path == w.path || w.path == "/" || strings.HasPrefix(ev.Path, w.path+"/")
}

// push queues ev; last says no event follows it. Never blocks.
func (w *persistentWatch) push(ev Event, last bool) {
	w.mu.Lock()
	if w.final {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, ev)
	w.final = last
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *persistentWatch) pump() {
	defer close(w.done)
	defer close(w.out)
	for {
		w.mu.Lock()
		q, final := w.queue, w.final
		w.queue = nil
		w.mu.Unlock()
		for _, ev := range q {
			select {
			case <-w.stop:
				return
			default:
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		}
		if final {
			return
		}
		select {
		case <-w.wake:
		case <-w.stop:
			return
		}
	}
}

// AddPersistentWatch sends addWatch (ZooKeeper 3.6+) for path in mode and
// returns the watch's channel. Unlike the one-shot watches of GetW,
// ExistsW and ChildrenW, the server keeps the watch when it fires, and
// the channel stays open: it receives every event for the watch, in the
// order the server sent them (unbuffered, but the connection never waits
// for the reader: events queue up in memory until read). Its events
// carry Type, State and Path as the server sent them, with no data.
//
// After a reconnect the client registers the watch again (setWatches2)
// and then sends EventWatchRestored on the channel: changes made while it
// was disconnected are not replayed, so a caller that follows a node
// reads it again then. When the session expires or the Conn is closed,
// the channel gets EventNotWatching (with Err) and is closed, as one-shot
// watch channels are.
//
// Each call is its own registration with its own channel, removed by
// RemovePersistentWatch. The caller must read the channel until it is
// closed or remove the watch.
func (c *Conn) AddPersistentWatch(path string, mode AddWatchMode) (<-chan Event, error) {
	if err := validatePath(path, false); err != nil {
		return nil, err
	}
	if mode != AddWatchModePersistent && mode != AddWatchModePersistentRecursive {
		return nil, ErrBadArguments
	}
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	var w *persistentWatch
	_, err := c.request(opAddWatch, &addWatchRequest{Path: path, Mode: int32(mode)}, &addWatchResponse{},
		func(req *request, res *responseHeader, err error) {
			// Registered in the receive loop, before it reads the next
			// packet: no event after the reply is missed.
			if err == nil {
				w = c.addPersistent(path, mode)
			}
		})
	if err != nil {
		if w != nil { // the reply arrived, but the caller gets an error
			c.dropPersistent(w)
		}
		return nil, err
	}
	return w.out, nil
}

func (c *Conn) addPersistent(path string, mode AddWatchMode) *persistentWatch {
	w := newPersistentWatch(path, mode)
	c.watchersLock.Lock()
	defer c.watchersLock.Unlock()
	if c.persistent == nil {
		c.persistent = make(map[<-chan Event]*persistentWatch)
	}
	c.persistent[w.out] = w
	return w
}

// dropPersistent unregisters w locally and waits until its channel is
// closed; it reports whether w was registered and whether another
// persistent watch or a one-shot watch of this Conn is still on its path.
func (c *Conn) dropPersistent(w *persistentWatch) (registered, otherPersistent, oneShot bool) {
	c.watchersLock.Lock()
	if c.persistent[w.out] == w {
		registered = true
		delete(c.persistent, w.out)
	}
	for _, o := range c.persistent {
		if o.path == w.path {
			otherPersistent = true
		}
	}
	for _, t := range []watchType{watchTypeData, watchTypeExist, watchTypeChild} {
		if len(c.watchers[watchPathType{w.path, t}]) > 0 {
			oneShot = true
		}
	}
	c.watchersLock.Unlock()
	close(w.stop)
	<-w.done
	return registered, otherPersistent, oneShot
}

// RemovePersistentWatch removes the persistent watch whose channel ch
// AddPersistentWatch returned. The channel is closed before it returns,
// with any event not yet read dropped: nothing is delivered after the
// removal. The watch is removed locally even when the request fails.
//
// The server's watch is removed with removeWatches unless another
// persistent watch of this Conn is on the same path. The request names
// the watcher type of the mode (4 or 5, ZooKeeper 3.9+); a server that
// does not know it (3.8 answers MARSHALLINGERROR) is asked again with type
// 3 (any), and so is every later removal on this Conn. Type any also
// removes one-shot watches on the path, so in that case a path that still
// has one-shot watches of this Conn keeps its server watch: its events
// reach the one-shot watches, and no persistent watch, until the next
// reconnect, which does not register it again. A server that has no such
// watch any more (ErrNoWatcher) is no error.
func (c *Conn) RemovePersistentWatch(ch <-chan Event) error {
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.watchersLock.Lock()
	w := c.persistent[ch]
	c.watchersLock.Unlock()
	if w == nil {
		return ErrNotPersistentWatch
	}
	registered, otherPersistent, oneShot := c.dropPersistent(w)
	if !registered {
		return ErrNotPersistentWatch
	}
	if otherPersistent {
		return nil
	}
	typ := watcherTypePersistent
	if w.mode == AddWatchModePersistentRecursive {
		typ = watcherTypePersistentRecursive
	}
	if c.removeWithAny.Load() {
		if oneShot {
			return nil
		}
		typ = watcherTypeAny
	}
	_, err := c.request(opRemoveWatches, &removeWatchesRequest{Path: w.path, Type: typ}, &removeWatchesResponse{}, nil)
	if errors.Is(err, ErrMarshalling) && typ != watcherTypeAny {
		c.removeWithAny.Store(true)
		if oneShot {
			return nil
		}
		_, err = c.request(opRemoveWatches, &removeWatchesRequest{Path: w.path, Type: watcherTypeAny}, &removeWatchesResponse{}, nil)
	}
	if errors.Is(err, ErrNoWatcher) {
		return nil
	}
	return err
}

// oneShotBesidePersistent runs when a one-shot watch was armed on path
// (addWatcher, in the receive loop, holding watchersLock). A ZooKeeper 3.8
// server keeps one watch mode per connection and path, so the one-shot
// watch has turned the persistent watches of this Conn on path into a
// one-shot one; the client adds them again, and once the server has
// (in the receive loop, with the reply) sends them EventWatchRestored,
// since a change in between may have been missed. Servers that keep
// both modes (3.9+) just answer the idempotent addWatch.
func (c *Conn) oneShotBesidePersistent(path string) {
	for _, w := range c.persistent {
		if w.path == path {
			go c.rearmPersistent(path)
			return
		}
	}
}

func (c *Conn) rearmPersistent(path string) {
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.watchersLock.Lock()
	var ws []*persistentWatch
	has := map[AddWatchMode]bool{}
	for _, w := range c.persistent {
		if w.path == path {
			ws = append(ws, w)
			has[w.mode] = true
		}
	}
	c.watchersLock.Unlock()
	var modes []AddWatchMode
	for _, m := range []AddWatchMode{AddWatchModePersistent, AddWatchModePersistentRecursive} {
		if has[m] {
			modes = append(modes, m)
		}
	}
	for i, mode := range modes {
		last := i == len(modes)-1
		_, err := c.request(opAddWatch, &addWatchRequest{Path: path, Mode: int32(mode)}, &addWatchResponse{},
			func(_ *request, _ *responseHeader, err error) {
				if err == nil && last {
					c.restored(ws)
				}
			})
		if err != nil {
			// A reconnect registers them again and says so.
			c.logger.Printf("Failed to add persistent watches on %s again: %v", path, err)
			return
		}
	}
}

// notifyPersistent queues a node event on every persistent watch it is for.
// notifyWatches calls it for each node event, in the order the server sent
// them, holding watchersLock: one lock an event for both kinds of watch.
func (c *Conn) notifyPersistent(ev Event) {
	for _, w := range c.persistent {
		if w.matches(ev) {
			w.push(ev, false)
		}
	}
}

// invalidatePersistent ends every persistent watch with ev (the caller
// holds watchersLock).
func (c *Conn) invalidatePersistent(err error) {
	for _, w := range c.persistent {
		ev := Event{Type: EventNotWatching, State: StateDisconnected, Path: w.path, Err: err}
		c.sendEvent(ev)
		w.push(ev, true)
	}
	c.persistent = nil
}

// restored tells the watches that a setWatches2 re-added that it did
// (called in the receive loop with the request's reply).
func (c *Conn) restored(ws []*persistentWatch) {
	c.watchersLock.Lock()
	defer c.watchersLock.Unlock()
	for _, w := range ws {
		if c.persistent[w.out] == w {
			w.push(Event{Type: EventWatchRestored, State: StateHasSession, Path: w.path}, false)
		}
	}
}
