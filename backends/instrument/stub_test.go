package instrument_test

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
)

// stubSession is a trivial in-memory Session used only to test and measure
// the decorator's own logic and cost. It says nothing about any real backend:
// the decorator against real ZooKeeper and etcd, compared with the servers'
// own counters, is tested in backends/backendtest.
type stubSession struct {
	err     error                    // returned by every call when set
	listed  int64                    // Listed of what Predecessor and PredecessorOf return
	watches chan chan backends.Event // if set, each watch call takes its channel from here
	done    chan struct{}
}

var errStub = errors.New("stub: failed")

func newStub() *stubSession { return &stubSession{done: make(chan struct{})} }

func (s *stubSession) Create(ctx context.Context, path string, data []byte) (backends.Node, error) {
	return backends.Node{Path: path}, s.err
}
func (s *stubSession) CreateSequential(ctx context.Context, parent, prefix string, data []byte) (backends.Node, error) {
	return backends.Node{Path: parent + "/" + prefix}, s.err
}
func (s *stubSession) Get(ctx context.Context, path string) ([]byte, backends.Node, error) {
	return nil, backends.Node{Path: path}, s.err
}
func (s *stubSession) Delete(ctx context.Context, path string) error { return s.err }
func (s *stubSession) Children(ctx context.Context, parent string) ([]backends.Node, error) {
	return nil, s.err
}
func (s *stubSession) EnsurePath(ctx context.Context, path string) error       { return s.err }
func (s *stubSession) Set(ctx context.Context, path string, data []byte) error { return s.err }
func (s *stubSession) Enqueue(ctx context.Context, parent, tag string) (backends.Node, error) {
	return backends.Node{Path: parent + "/" + tag}, s.err
}
func (s *stubSession) Predecessor(ctx context.Context, parent string, me backends.Node, gone string) (backends.Node, bool, error) {
	return backends.Node{Listed: s.listed}, false, s.err
}
func (s *stubSession) PredecessorOf(ctx context.Context, parent, prefix string, me backends.Node) (backends.Node, bool, error) {
	return backends.Node{Listed: s.listed}, false, s.err
}
func (s *stubSession) Dequeue(ctx context.Context, me backends.Node) error { return s.err }
func (s *stubSession) SetIf(ctx context.Context, guard string, want []byte, writes []backends.Write) (bool, error) {
	return s.err == nil, s.err
}
func (s *stubSession) ChildrenVersion(ctx context.Context, parent string) ([]backends.Node, int64, error) {
	return nil, 0, s.err
}
func (s *stubSession) Commit(ctx context.Context, ops ...backends.Op) ([]backends.Node, error) {
	return nil, s.err
}
func (s *stubSession) Update(ctx context.Context, path string, data []byte) error { return s.err }
func (s *stubSession) Tagged(ctx context.Context, parent, tag string) ([]backends.Node, error) {
	return nil, s.err
}

func (s *stubSession) watch() chan backends.Event {
	if s.watches != nil {
		return <-s.watches
	}
	ch := make(chan backends.Event, 1)
	ch <- backends.Event{Type: backends.EventDeleted}
	close(ch)
	return ch
}

func (s *stubSession) ExistsW(ctx context.Context, path string) (bool, backends.Node, <-chan backends.Event, error) {
	if s.err != nil {
		return false, backends.Node{}, nil, s.err
	}
	return true, backends.Node{Path: path}, s.watch(), nil
}
func (s *stubSession) ChildrenW(ctx context.Context, parent string) ([]backends.Node, <-chan backends.Event, error) {
	if s.err != nil {
		return nil, nil, s.err
	}
	return nil, s.watch(), nil
}
func (s *stubSession) ID() int64             { return 42 }
func (s *stubSession) Done() <-chan struct{} { return s.done }
func (s *stubSession) Close() error          { return nil }

// stubBackend opens stub sessions; admin and scraper say which optional
// interfaces the wrapper must keep.
type stubBackend struct{}

func (stubBackend) Kind() backends.Kind { return "stub" }
func (stubBackend) Preflight(ctx context.Context) (backends.ClusterInfo, error) {
	return backends.ClusterInfo{Kind: "stub"}, nil
}
func (stubBackend) NewSession(ctx context.Context) (backends.Session, error) { return newStub(), nil }
func (stubBackend) Close() error                                             { return nil }

type stubAdmin struct{ stubBackend }

func (stubAdmin) List(ctx context.Context, path string) ([]string, error) { return []string{"x"}, nil }
func (stubAdmin) DeleteTree(ctx context.Context, path string) error       { return nil }

type stubScraper struct{ stubBackend }

func (stubScraper) Scrape(ctx context.Context) (backends.Metrics, error) {
	return backends.Metrics{"x": 1}, nil
}

type stubBoth struct {
	stubAdmin
	stubScraper
}

// stubBoth embeds two stubBackends; pick one set of Backend methods.
func (stubBoth) Kind() backends.Kind { return "stub" }
func (stubBoth) Preflight(ctx context.Context) (backends.ClusterInfo, error) {
	return backends.ClusterInfo{Kind: "stub"}, nil
}
func (stubBoth) NewSession(ctx context.Context) (backends.Session, error) { return newStub(), nil }
func (stubBoth) Close() error                                             { return nil }
