package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/executor"
)

// Exec is `zkbench exec`: it reaches the servers at srv.Endpoints, or
// starts them as a run does (and says where, on cfg.Log, so that
// something can write the node), opens one session, says its ID (etcd:
// its lease) and runs cfg on it until ctx ends or the session is lost
// (executor.ErrSessionExpired, wrapped with the session's ID). The
// servers it started stop when it returns.
func Exec(ctx context.Context, kind backends.Kind, srv Servers, cfg executor.Config) error {
	c, err := Connect(ctx, kind, srv)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = c.Stop(sctx)
	}()
	logw := cfg.Log
	if len(srv.Endpoints) == 0 {
		var eps []string
		for _, m := range c.Info.Members {
			eps = append(eps, m.Endpoint)
		}
		fmt.Fprintf(logw, "zkbench exec: %s started at %s\n", kind, strings.Join(eps, ","))
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	s, err := c.Backend.NewSession(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("open a session: %w", err)
	}
	defer s.Close()
	// The session's ID (etcd: its lease) names it on the servers, for an
	// operator to find, and for the tests to expire it alone.
	fmt.Fprintf(logw, "zkbench exec: %s session %#x\n", kind, s.ID())
	err = executor.New(s, cfg).Run(ctx)
	if errors.Is(err, executor.ErrSessionExpired) {
		return fmt.Errorf("%w (%s session %#x)", err, kind, s.ID())
	}
	return err
}
