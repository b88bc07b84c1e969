package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

// Preflight checks every endpoint at once, each within WithStatusTimeout
// (default 3s) and ctx: a TCP connect, a sniff of what answers there (so a
// ZooKeeper port, a TLS mismatch or a silent listener is named as such), a
// gRPC Maintenance.Status (version; leader -> Role) and a count-only read
// below /zkbench (authentication and permission). clientv3.New alone would
// not notice an unreachable endpoint. It also fails when the cluster has no
// leader. Errors wrap ErrPreflight and say what to do.
func (b *Backend) Preflight(ctx context.Context) (backends.ClusterInfo, error) {
	info := backends.ClusterInfo{Kind: backends.Etcd, MaxClientCnxns: -1}
	members := make([]backends.MemberInfo, len(b.eps))
	errs := make([]error, len(b.eps))
	var wg sync.WaitGroup
	for i, e := range b.eps {
		wg.Go(func() { members[i], errs[i] = b.probe(ctx, e) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return info, err
	}
	info.Members = members
	return info, nil
}

// probe checks one endpoint.
func (b *Backend) probe(ctx context.Context, e endpoint) (backends.MemberInfo, error) {
	mi := backends.MemberInfo{Endpoint: e.raw}
	ctx, cancel := context.WithTimeout(ctx, b.opts.statusTimeout)
	defer cancel()
	fail := func(format string, a ...any) (backends.MemberInfo, error) {
		return mi, fmt.Errorf("%w: %s", ErrPreflight, fmt.Sprintf(format, a...))
	}

	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.host)
	if err != nil {
		return fail("%s is unreachable (%v): is etcd running there?", e.raw, err)
	}
	conn.Close()

	v := b.sniff(ctx, e)
	if v.definite() {
		return fail("%s", v.message(e.raw))
	}

	cli, err := b.probeClient(ctx, e)
	if err != nil {
		if isAuthError(err) {
			return fail("%s refused the credentials of user %q (%v): check username and password", e.raw, b.cfg.Username, err)
		}
		return fail("%s: %v", e.raw, err)
	}
	defer cli.Close()

	start := time.Now()
	st, err := cli.Status(ctx, e.host)
	mi.RTT = time.Since(start)
	switch {
	case err == nil:
	case errors.Is(err, rpctypes.ErrUserEmpty):
		return fail("%s has authentication enabled: give a username and password", e.raw)
	case isAuthError(err):
		return fail("%s: user %q may not ask for the member's status (%v)", e.raw, b.cfg.Username, err)
	case ctx.Err() != nil:
		return fail("%s accepted a connection but gave no etcd gRPC answer within %v%s", e.raw, b.opts.statusTimeout, v.hint())
	default:
		return fail("%s: Status: %v%s", e.raw, err, v.hint())
	}
	mi.Version = st.Version
	switch {
	case st.IsLearner:
		mi.Role = "learner"
	case st.Leader == 0:
		mi.Role = "no-leader"
		return fail("%s (etcd %s) has no leader: the cluster has lost its quorum or is still electing", e.raw, st.Version)
	case st.Leader == st.Header.MemberId:
		mi.Role = "leader"
	default:
		mi.Role = "follower"
	}

	_, err = cli.Get(ctx, backends.Root+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	switch {
	case err == nil:
	case errors.Is(err, rpctypes.ErrUserEmpty):
		return fail("%s has authentication enabled: give a username and password", e.raw)
	case isAuthError(err):
		return fail("%s: user %q may not read %s/ (%v)", e.raw, b.cfg.Username, backends.Root, err)
	default:
		return fail("%s: read %s/: %v", e.raw, backends.Root, clientv3.ContextError(ctx, err))
	}
	return mi, nil
}

// probeClient is a client on one endpoint, closed with ctx at the latest.
func (b *Backend) probeClient(ctx context.Context, e endpoint) (*clientv3.Client, error) {
	dial := b.cfg.DialTimeout
	if dl, ok := ctx.Deadline(); ok {
		dial = min(dial, time.Until(dl))
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{e.host},
		DialTimeout: dial,
		TLS:         b.tls,
		Username:    b.cfg.Username,
		Password:    b.cfg.Password,
		Logger:      b.opts.logger,
		DialOptions: b.opts.dialOptions,
		Context:     ctx,
	})
}

func isAuthError(err error) bool {
	for _, e := range []error{
		rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied, rpctypes.ErrInvalidAuthToken,
		rpctypes.ErrUserNotFound, rpctypes.ErrAuthOldRevision, rpctypes.ErrInvalidAuthMgmt,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
