// Package etcd starts etcd servers for zkbench: an embedded member in this
// process (the default server of a run: no install, starts in well under a
// second), n embedded members for tests, or n members as separate processes
// (the zkbench binary re-executing itself with the hidden MemberCommand), for
// server cost that can be told apart from zkbench's and for fault injection
// (Kill, Restart, Pause, Resume).
//
// Every member listens on free loopback ports, logs only errors, and fsyncs
// as etcd does by default; Options.UnsafeNoFsync trades durability for speed
// and is off unless asked for.
package etcd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync/atomic"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// MemberCommand is the hidden zkbench subcommand that runs one member
// process; StartLocal runs `<Exe> __etcd-member <MemberConfig.Args()>`.
const MemberCommand = "__etcd-member"

// MemberConfig is one member's launch configuration: the flags of
// MemberCommand.
type MemberConfig struct {
	Name      string `json:"name"`
	DataDir   string `json:"data_dir"`
	ClientURL string `json:"client_url"` // listened on and advertised
	PeerURL   string `json:"peer_url"`   // listened on and advertised
	// InitialCluster is "name=peerURL,..." over every member.
	InitialCluster string `json:"initial_cluster"`
	// ClusterState is "new" on first start, "existing" on a restart.
	ClusterState string `json:"cluster_state"`
	Token        string `json:"token"`
	// UnsafeNoFsync skips fsync of the WAL and database: faster writes, but
	// a power loss or kernel crash may lose acknowledged writes. Opt-in.
	UnsafeNoFsync bool `json:"unsafe_no_fsync,omitempty"`
}

// Args renders c as MemberCommand flags.
func (c MemberConfig) Args() []string {
	a := []string{
		"--name", c.Name, "--data-dir", c.DataDir,
		"--listen-client", c.ClientURL, "--listen-peer", c.PeerURL,
		"--initial-cluster", c.InitialCluster, "--initial-cluster-state", c.ClusterState,
		"--initial-cluster-token", c.Token,
	}
	if c.UnsafeNoFsync {
		a = append(a, "--unsafe-no-fsync")
	}
	return a
}

// ParseMemberArgs parses MemberCommand flags (the output of Args).
func ParseMemberArgs(args []string) (MemberConfig, error) {
	var c MemberConfig
	fs := flag.NewFlagSet(MemberCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.Name, "name", "", "member name")
	fs.StringVar(&c.DataDir, "data-dir", "", "data directory")
	fs.StringVar(&c.ClientURL, "listen-client", "", "client URL")
	fs.StringVar(&c.PeerURL, "listen-peer", "", "peer URL")
	fs.StringVar(&c.InitialCluster, "initial-cluster", "", "name=peerURL,...")
	fs.StringVar(&c.ClusterState, "initial-cluster-state", "new", "new or existing")
	fs.StringVar(&c.Token, "initial-cluster-token", "zkbench", "cluster token")
	fs.BoolVar(&c.UnsafeNoFsync, "unsafe-no-fsync", false, "skip fsync (unsafe)")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("cluster/etcd: %s: %w", MemberCommand, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("cluster/etcd: %s: unexpected arguments %q", MemberCommand, fs.Args())
	}
	if c.Name == "" || c.DataDir == "" || c.ClientURL == "" || c.PeerURL == "" {
		return c, fmt.Errorf("cluster/etcd: %s: --name, --data-dir, --listen-client and --listen-peer are required", MemberCommand)
	}
	if c.InitialCluster == "" {
		c.InitialCluster = c.Name + "=" + c.PeerURL
	}
	return c, nil
}

// embedConfig turns c into etcd's config, logging through lg.
func (c MemberConfig) embedConfig(lg *zap.Logger) (*embed.Config, error) {
	cu, err := url.Parse(c.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("cluster/etcd: client URL: %w", err)
	}
	pu, err := url.Parse(c.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("cluster/etcd: peer URL: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.DataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = c.InitialCluster
	cfg.InitialClusterToken = c.Token
	cfg.ClusterState = c.ClusterState
	cfg.UnsafeNoFsync = c.UnsafeNoFsync
	cfg.Metrics = "basic"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	// The gRPC gateway (JSON over HTTP) is not used by zkbench.
	cfg.EnableGRPCGateway = false
	return cfg, nil
}

// RunMember runs one member until ctx is done or the server fails, then
// closes it. Used by MemberCommand in a member process; logs errors to
// stderr.
func RunMember(ctx context.Context, c MemberConfig) error {
	var closing atomic.Bool
	lg, err := zap.NewProductionConfig().Build(zap.IncreaseLevel(zap.ErrorLevel),
		zap.WrapCore(func(core zapcore.Core) zapcore.Core { return quietOnClose{core, &closing} }))
	if err != nil {
		return err
	}
	cfg, err := c.embedConfig(lg)
	if err != nil {
		return err
	}
	// A member process serves /debug/pprof on its client URL, so that a
	// run can read its live heap (a watch's memory on the server). An
	// embedded member shares zkbench's heap and has nothing to tell apart.
	cfg.EnablePprof = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("cluster/etcd: start member %s: %w", c.Name, err)
	}
	select {
	case <-ctx.Done():
		err = nil
	case err = <-e.Err():
		err = fmt.Errorf("cluster/etcd: member %s: %w", c.Name, err)
	}
	closing.Store(true) // a closing server reports its own shutdown as errors
	e.Close()
	return err
}

// quietOnClose drops every entry once closing is set.
type quietOnClose struct {
	zapcore.Core
	closing *atomic.Bool
}

func (q quietOnClose) With(f []zapcore.Field) zapcore.Core {
	return quietOnClose{q.Core.With(f), q.closing}
}

func (q quietOnClose) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.closing.Load() {
		return ce
	}
	return q.Core.Check(e, ce)
}

// initialCluster renders "name=peerURL,..." for members.
func initialCluster(ms []MemberConfig) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Name + "=" + m.PeerURL
	}
	return strings.Join(parts, ",")
}
