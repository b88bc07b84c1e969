package faults

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zkbench/zkbench/internal/fourlw"
)

// ErrNoLeader: no server said it leads.
var ErrNoLeader = errors.New("faults: no leader")

// probeTimeout bounds each server's answer to a leader probe.
const probeTimeout = time.Second

// ZooKeeperLeader finds the leader among endpoints ("host:port") by asking
// each server "srvr": the one whose mode is leader (or standalone).
func ZooKeeperLeader(endpoints []string) LeaderFunc {
	return func(ctx context.Context) (int, error) {
		var errs []error
		for i, ep := range endpoints {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			reply, err := fourlw.Query(pctx, ep, "srvr")
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", ep, err))
				continue
			}
			s, err := fourlw.ParseSrvr(reply)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", ep, err))
				continue
			}
			if s.Mode == "leader" || s.Mode == "standalone" {
				return i, nil
			}
		}
		return -1, fmt.Errorf("%w among %d ZooKeeper servers: %w", ErrNoLeader, len(endpoints), errors.Join(errs...))
	}
}

// EtcdLeader finds the leader among endpoints (client URLs or host:port) by
// asking each member its status: the one whose member id is the leader's.
func EtcdLeader(endpoints []string) LeaderFunc {
	return func(ctx context.Context) (int, error) {
		var errs []error
		for i, ep := range endpoints {
			ep = withScheme(ep)
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: probeTimeout, Logger: zap.NewNop()})
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", ep, err))
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			st, err := c.Status(pctx, ep)
			cancel()
			_ = c.Close()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", ep, err))
				continue
			}
			if st.Leader != 0 && st.Leader == st.Header.MemberId {
				return i, nil
			}
		}
		return -1, fmt.Errorf("%w among %d etcd members: %w", ErrNoLeader, len(endpoints), errors.Join(errs...))
	}
}

func withScheme(ep string) string {
	if u, err := url.Parse(ep); err == nil && u.Scheme != "" && u.Host != "" {
		return ep
	}
	return "http://" + ep
}

// ZKExpirer expires ZooKeeper sessions seen by a ZKSessions, through any of
// the servers.
type ZKExpirer struct {
	Sessions  *ZKSessions
	Endpoints []string
}

// Expire implements Expirer.
func (e ZKExpirer) Expire(ctx context.Context, session int64) error {
	return e.Sessions.Expire(ctx, e.Endpoints, session)
}

// EtcdExpirer expires etcd sessions by revoking their lease: the server
// deletes every key attached to it at once, as when the TTL runs out, and
// the session's keepalive learns it is gone.
type EtcdExpirer struct {
	endpoints []string

	mu     sync.Mutex
	client *clientv3.Client
}

// NewEtcdExpirer returns an expirer that connects to endpoints on first use.
// Close it when done.
func NewEtcdExpirer(endpoints []string) *EtcdExpirer {
	eps := make([]string, len(endpoints))
	for i, ep := range endpoints {
		eps[i] = withScheme(ep)
	}
	return &EtcdExpirer{endpoints: eps}
}

// Expire implements Expirer: session is the etcd lease id.
func (e *EtcdExpirer) Expire(ctx context.Context, session int64) error {
	e.mu.Lock()
	if e.client == nil {
		c, err := clientv3.New(clientv3.Config{Endpoints: e.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			e.mu.Unlock()
			return fmt.Errorf("faults: expire lease %x: %w", session, err)
		}
		e.client = c
	}
	c := e.client
	e.mu.Unlock()
	if _, err := c.Revoke(ctx, clientv3.LeaseID(session)); err != nil {
		return fmt.Errorf("faults: revoke lease %x: %w", session, err)
	}
	return nil
}

// Close closes the expirer's client.
func (e *EtcdExpirer) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		return nil
	}
	err := e.client.Close()
	e.client = nil
	return err
}
