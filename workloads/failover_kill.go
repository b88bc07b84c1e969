package workloads

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes/native"
	"github.com/zkbench/zkbench/workloads/measure"
)

// Ways to end a leader's session (ParamKill).
const (
	KillClose  = "close"
	KillExpire = "expire"
	KillCrash  = "crash"
)

// sessionCrasher is a session (or decorator) that can end as its process dying
// would: its connection gone with no close, the server ending the session
// when its timeout runs out (zookeeper.Session.Crash, etcd.Session.Crash).
type sessionCrasher interface {
	Crash() error
	// Timeout is the session's timeout (ZooKeeper's session timeout,
	// etcd's lease TTL).
	Timeout() time.Duration
}

// crashWait is how long the failover loop waits, once the candidates are
// quiet, before it crashes a leader of session timeout t: a random time
// from t/3 to 2t/3. Both clients send a heartbeat every t/3 to an idle
// session (go-zookeeper's ping ticker; zkbench's etcd keep-alive, t/3
// after the last answer), so after at least t/3 the leader's last word to
// the server is a heartbeat, and a wait spread over one heartbeat period
// puts the crash at a uniformly random point of it, as a crash falls at
// any point of a long-idle leader's term. (Crashed at once, a leader new
// in office would die right after the requests that elected it.)
func crashWait(t time.Duration) time.Duration {
	if t < 3 {
		return 0
	}
	return t/3 + rand.N(t/3)
}

// expirer is a session (or decorator) that can make its own session expire
// on the server, as a fault would, without closing it on the client.
type expirer interface {
	Expire(ctx context.Context) error
}

// SessionExpirer is a Backend that can make any of its sessions expire on
// the server, from outside the session's client (faults.Backend given an
// expirer: on ZooKeeper it attaches to the session from a second
// connection and closes it there). Found on Case.Backend by type assertion;
// with it ParamKill "expire" works on ZooKeeper.
type SessionExpirer interface {
	// ExpireSession ends the session with id session on the server now;
	// the session's own client learns of it when it next hears from the
	// server. ctx bounds the exchange.
	ExpireSession(ctx context.Context, session int64) error
}

// canExpire reports whether endSession(KillExpire) works on s, a session
// of be.
func canExpire(s backends.Session, be backends.Backend) bool {
	if findExpirer(s) != nil {
		return true
	}
	if _, ok := native.Underlying(s).(native.EtcdSession); ok {
		return true
	}
	_, ok := be.(SessionExpirer)
	return ok
}

func findExpirer(s backends.Session) expirer { return find[expirer](s) }

// find is the first session of s's decorator chain, s first, that is a T.
func find[T any](s backends.Session) T {
	for s != nil {
		if e, ok := s.(T); ok {
			return e
		}
		u, ok := s.(interface{ Unwrap() backends.Session })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var none T
	return none
}

// endSession ends s, a session of be, abruptly. KillClose closes it: the
// server removes its ephemeral nodes at once and its Done closes.
// KillExpire makes the server end it without the client's help: a session
// that can expire itself (an Expire method anywhere in its decorator chain)
// does; on etcd the lease is revoked from the session's own client, as the
// lease's expiry would be, and the session finds out from its keep-alive;
// else a backend that can expire its sessions (SessionExpirer, the way to
// do it on ZooKeeper) does it. The old leader then learns late, which the
// failover workload measures ("lost_notice"). KillCrash ends s as its
// process dying would (sessionCrasher): the server ends the session only when its
// timeout runs out, so the failover includes that wait.
func endSession(ctx context.Context, s backends.Session, be backends.Backend, mode string) error {
	switch mode {
	case KillClose:
		return s.Close()
	case KillCrash:
		if c := find[sessionCrasher](s); c != nil {
			return c.Crash()
		}
		return fmt.Errorf("%w: %s=%s: this backend's sessions cannot crash; use %s=%s or %s", ErrBadCase, ParamKill, KillCrash, ParamKill, KillClose, KillExpire)
	case KillExpire:
		if e := findExpirer(s); e != nil {
			return e.Expire(ctx)
		}
		if es, ok := native.Underlying(s).(native.EtcdSession); ok {
			_, err := es.Client().Revoke(ctx, es.Lease())
			return err
		}
		if e, ok := be.(SessionExpirer); ok {
			return e.ExpireSession(ctx, s.ID())
		}
		return fmt.Errorf("%w: %s=%s: this backend's sessions cannot be expired (on ZooKeeper, zkbench run expires them through its session watcher); use %s=%s",
			ErrBadCase, ParamKill, KillExpire, ParamKill, KillClose)
	}
	return fmt.Errorf("%w: %s=%q", ErrBadCase, ParamKill, mode)
}

// awaitArmed waits until every client i of clients for which waiting(i)
// holds has a watch open: a waiter an election woke has looked and armed
// its next watch, so it is asleep (a one-shot watch ends when it fires).
// A quiet window alone cannot say that: a woken waiter the scheduler holds
// for longer than the window sends nothing in it. It returns false if some
// waiter had none when limit passed or ctx ended.
func awaitArmed(ctx context.Context, clients *measure.Clients, waiting func(i int) bool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for i, c := range clients.Counters {
		for waiting(i) && c.OpenWatches() == 0 {
			if time.Now().After(deadline) || !sleepCtx(ctx, 500*time.Microsecond) {
				return false
			}
		}
	}
	return true
}

// quiesce waits until the clients' total requests have not changed for
// quiet (every woken waiter has gone back to sleep), or until limit passes
// or ctx ends. Variants the instrument does not see count no requests: for
// them it waits quiet once.
func quiesce(ctx context.Context, clients *measure.Clients, quiet, limit time.Duration) {
	if quiet <= 0 {
		return
	}
	deadline := time.Now().Add(limit)
	last := clients.Total().TotalRequests()
	since := time.Now()
	tick := max(quiet/10, time.Millisecond)
	for time.Since(since) < quiet && time.Now().Before(deadline) {
		if !sleepCtx(ctx, tick) {
			return
		}
		if n := clients.Total().TotalRequests(); n != last {
			last, since = n, time.Now()
		}
	}
}
