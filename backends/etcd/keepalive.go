package etcd

import (
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/ctxsleep"
)

// keeper keeps one session's lease alive, as clientv3's lessor would, on
// a LeaseKeepAlive stream of the session's own connection (so a client
// cut off from the cluster loses its lease as a real process would), at
// one goroutine a session, the stream's receiver, and two runtime timers:
// the next keep-alive, sent TTL/3 after the last response (and again half
// an interval later while unanswered), and the expiry, a whole TTL
// without a response. clientv3's lessor takes four goroutines
// a client and wakes each client's send loop every 500 ms; at ten thousand
// sessions those goroutines' stacks were a sixth of zkbench's memory a
// client and the wake-ups a fifth of its CPU, and the collector scanned
// the stacks at every cycle.
//
// It times each keep-alive as ZooKeeper's pings are timed: how long after
// it was due it left the client, and its round trip.
type keeper struct {
	s   *Session
	ls  pb.LeaseClient
	rec *backends.KeepAliveRecorder

	mu       sync.Mutex // serialises sends; guards the fields below
	stream   pb.Lease_LeaseKeepAliveClient
	due      time.Time // when the next keep-alive is due
	sent     time.Time // when the last one left, zero once answered
	interval time.Duration
	next     *time.Timer
	expire   *time.Timer
}

// keepAliveRetry is how long the keeper waits before it opens a new
// stream after one broke (clientv3's lessor waits the same).
const keepAliveRetry = 500 * time.Millisecond

// startKeeper opens s's keep-alive stream and sends the first keep-alive
// at once. ttl is the granted TTL: the lease is taken for lost when no
// response comes within it.
func startKeeper(s *Session, rec *backends.KeepAliveRecorder, ttl time.Duration) error {
	k := &keeper{s: s, ls: pb.NewLeaseClient(s.cli.ActiveConnection()), rec: rec, interval: ttl / 3}
	stream, err := k.open()
	if err != nil {
		return err
	}
	k.expire = time.AfterFunc(ttl, s.lose)
	k.mu.Lock() // send, on the timer's goroutine, takes it: k.next is set first
	k.stream, k.due = stream, time.Now()
	k.next = time.AfterFunc(0, k.send)
	k.mu.Unlock()
	go k.receive(stream)
	return nil
}

// open starts a stream that ends with the session and, like the lessor's,
// when its member loses the leader (a keep-alive there would not renew).
func (k *keeper) open() (pb.Lease_LeaseKeepAliveClient, error) {
	return k.ls.LeaseKeepAlive(clientv3.WithRequireLeader(k.s.ctx))
}

// send sends one keep-alive on the current stream. A failed send breaks
// the stream, which receive sees and replaces.
func (k *keeper) send() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stream == nil || k.s.ctx.Err() != nil {
		return
	}
	now := time.Now()
	k.rec.Lateness(k.interval, now.Sub(k.due))
	k.sent = now
	// Sent again if unanswered (a request lost in a cut that did not
	// break the stream): half an interval on, at least keepAliveRetry.
	again := max(k.interval/2, keepAliveRetry)
	k.due = now.Add(again)
	k.next.Reset(again)
	_ = k.stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(k.s.lease)})
}

// receive reads the responses until the session ends: each renews the
// expiry and schedules the next keep-alive; a TTL of 0 (the server no
// longer has the lease) loses the session; a broken stream is replaced
// after keepAliveRetry while the expiry runs on.
func (k *keeper) receive(stream pb.Lease_LeaseKeepAliveClient) {
	defer k.stop()
	for {
		resp, err := stream.Recv()
		if err != nil {
			if stream = k.reopen(); stream == nil {
				return
			}
			continue
		}
		if resp.TTL <= 0 {
			k.s.lose()
			return
		}
		now := time.Now()
		ttl := time.Duration(resp.TTL) * time.Second
		k.mu.Lock()
		if !k.sent.IsZero() {
			k.rec.Reply(now.Sub(k.sent))
			k.sent = time.Time{}
		}
		k.interval, k.due = ttl/3, now.Add(ttl/3)
		k.next.Reset(ttl / 3)
		k.mu.Unlock()
		k.expire.Reset(ttl)
	}
}

// reopen replaces a broken stream, trying every keepAliveRetry until it
// has one or the session ended (nil), and sends a keep-alive on it at once.
func (k *keeper) reopen() pb.Lease_LeaseKeepAliveClient {
	k.mu.Lock()
	k.stream = nil
	k.mu.Unlock()
	for ctxsleep.Sleep(k.s.ctx, keepAliveRetry) {
		stream, err := k.open()
		if err != nil {
			continue
		}
		k.mu.Lock()
		k.stream, k.due = stream, time.Now()
		k.next.Reset(0)
		k.mu.Unlock()
		return stream
	}
	return nil
}

// stop ends the timers once the session has ended.
func (k *keeper) stop() {
	k.mu.Lock()
	k.next.Stop()
	k.mu.Unlock()
	k.expire.Stop()
}
