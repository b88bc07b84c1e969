package faults

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/connectivity"

	"github.com/zkbench/zkbench/backends"
)

// etcdClientOf is an etcd session that exposes its client
// (backends/etcd.Session).
type etcdClientOf interface {
	Client() *clientv3.Client
}

// WatchEtcdConn reports the state changes of the gRPC connection that
// carries etcd session s, as session states: SessionDisconnected when a
// connection that was ready no longer is (no endpoint reachable: the
// client's balancer spreads over every endpoint, so losing one server of
// several is not a disconnect), SessionReconnected when it is ready again
// (the lease survived if it came back within the TTL; if not, the workload
// reports the session lost). It watches in a goroutine of its own that ends
// when s is done (closed or lost) or its client shuts down; done closes
// then. It returns nil, watching nothing, if s is not an etcd session
// (looked for through Unwrap). report runs on the watching goroutine and
// must not block for long. It returns once the watch is armed (the
// goroutine has read the connection's state and is about to wait for its
// change), so a reset made after it returns is seen even if the client
// reconnects before the watching goroutine runs again.
//
// A connection cut without a reset (a blackhole) stays ready as far as
// gRPC knows, since the client sends no keepalive pings: it is seen when
// the session is lost, not as a disconnect.
//
// With shared connections (backends/etcd Config.Conns) every session on
// one connection reports its changes.
func WatchEtcdConn(s backends.Session, report func(SessionState)) (done <-chan struct{}) {
	var cli *clientv3.Client
	for u := s; u != nil; {
		if e, ok := u.(etcdClientOf); ok {
			cli = e.Client()
			break
		}
		w, ok := u.(interface{ Unwrap() backends.Session })
		if !ok {
			break
		}
		u = w.Unwrap()
	}
	if cli == nil {
		return nil
	}
	conn := cli.ActiveConnection()
	if conn == nil {
		return nil
	}
	finished, armed := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(cli.Ctx(), cancel)
	go func() {
		select {
		case <-s.Done():
		case <-ctx.Done():
		}
		cancel()
	}()
	go func() {
		defer close(finished)
		defer stop()
		defer cancel()
		watchConnStates(ctx, conn, func() { close(armed) }, report)
	}()
	<-armed
	return finished
}

// connStates is the part of a *grpc.ClientConn that watchConnStates reads.
type connStates interface {
	GetState() connectivity.State
	WaitForStateChange(ctx context.Context, source connectivity.State) bool
}

// watchConnStates reports conn's disconnects and reconnects until ctx ends
// or conn shuts down. It calls armed once, after reading conn's first state
// and just before waiting for it to change: a change after the wait has
// begun is seen, and so is one that has not come back to the first state
// by then; a change and its return both inside the few instructions
// between armed and the wait's start would not be (WatchEtcdConn waits for
// armed before it returns, which shrinks the window from a goroutine's
// start-up on a loaded machine to those instructions).
func watchConnStates(ctx context.Context, conn connStates, armed func(), report func(SessionState)) {
	cur := conn.GetState()
	armed()
	down := false // a disconnect was reported and not yet undone
	for conn.WaitForStateChange(ctx, cur) {
		// WaitForStateChange returned: the state left cur. If cur was
		// Ready the connection went down, even when the state read now is
		// Ready again: on a loaded machine this goroutine may run only
		// after the client has reconnected (a reset through a local proxy
		// comes back within a millisecond).
		left := cur
		cur = conn.GetState()
		if cur == connectivity.Shutdown {
			return
		}
		if left == connectivity.Ready && !down {
			down = true
			report(SessionDisconnected)
		}
		if cur == connectivity.Ready && down {
			down = false
			report(SessionReconnected)
		}
	}
}
