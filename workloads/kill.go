package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes/native"
)

// Ways to end a leader's session (ParamKill).
const (
	KillClose  = "close"
	KillExpire = "expire"
)

// expirer is a session (or decorator) that can make its own session expire
// on the server, as a fault would, without closing it on the client.
type expirer interface {
	Expire(ctx context.Context) error
}

// canExpire reports whether endSession(KillExpire) works on s.
func canExpire(s backends.Session) bool {
	if findExpirer(s) != nil {
		return true
	}
	_, ok := native.Underlying(s).(native.EtcdSession)
	return ok
}

func findExpirer(s backends.Session) expirer {
	for s != nil {
		if e, ok := s.(expirer); ok {
			return e
		}
		u, ok := s.(interface{ Unwrap() backends.Session })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
	return nil
}

// endSession ends s abruptly. KillClose closes it: the server removes its
// ephemeral nodes at once and its Done closes. KillExpire makes the server
// end it without the client's help: a session that can expire itself
// (an Expire method anywhere in its decorator chain) does; on etcd the lease
// is revoked from the session's own client, as the lease's expiry would be,
// and the session finds out from its keep-alive. The old leader then learns
// late, which the failover workload measures ("lost_notice").
func endSession(ctx context.Context, s backends.Session, mode string) error {
	switch mode {
	case KillClose:
		return s.Close()
	case KillExpire:
		if e := findExpirer(s); e != nil {
			return e.Expire(ctx)
		}
		if es, ok := native.Underlying(s).(native.EtcdSession); ok {
			_, err := es.Client().Revoke(ctx, es.Lease())
			return err
		}
		return fmt.Errorf("%w: %s=%s: this backend's sessions cannot be expired from the client; use %s=%s",
			ErrBadCase, ParamKill, KillExpire, ParamKill, KillClose)
	}
	return fmt.Errorf("%w: %s=%q", ErrBadCase, ParamKill, mode)
}

// quiesce waits until the clients' total requests have not changed for
// quiet (every woken waiter has gone back to sleep), or until limit passes
// or ctx ends. Variants the instrument does not see count no requests: for
// them it waits quiet once.
func quiesce(ctx context.Context, clients *Clients, quiet, limit time.Duration) {
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
