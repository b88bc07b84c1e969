package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// status asks one member for its Status within timeout.
func status(ctx context.Context, endpoint string, timeout time.Duration) (*clientv3.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint}, DialTimeout: timeout, Logger: zap.NewNop(), Context: ctx,
	})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	return cli.Status(ctx, endpoint)
}

// waitReady polls Status on the given members until each answers with a
// leader known. It fails early when a member's process exits, quoting its
// log.
func (l *Local) waitReady(ctx context.Context, idx []int) error {
	var last error
	for {
		ready := 0
		for _, i := range idx {
			p, _ := l.procs.Proc(i)
			if p == nil || !p.Running() {
				return l.startError(i, "exited during start")
			}
			st, err := status(ctx, l.State().Members[i].Endpoint(), 500*time.Millisecond)
			switch {
			case err != nil:
				last = err
			case st.Leader == 0:
				last = fmt.Errorf("no leader yet")
			default:
				ready++
			}
		}
		if ready == len(idx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return l.startError(idx[0], fmt.Sprintf("not ready (%d of %d; last: %v): %v", ready, len(idx), last, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaderIndex returns the index of the running member that says it leads,
// or -1.
func (l *Local) leaderIndex(ctx context.Context) int {
	for i, m := range l.State().Members {
		if p, _ := l.procs.Proc(i); p == nil || !p.Running() {
			continue
		}
		st, err := status(ctx, m.Endpoint(), 300*time.Millisecond)
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
			return i
		}
	}
	return -1
}
