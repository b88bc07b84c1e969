package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// Errors of this package, checked with errors.Is. Operation errors use the
// backends sentinels (backends.ErrNodeExists, ...).
var (
	// ErrConfig: the Config cannot work (bad endpoint, lease TTL too short,
	// unreadable certificate).
	ErrConfig = errors.New("etcd: invalid config")
	// ErrPreflight: an endpoint did not answer as an etcd member should.
	ErrPreflight = errors.New("etcd: preflight failed")
	// ErrInvalidPath: a path is not absolute and clean ("/a/b").
	ErrInvalidPath = errors.New("etcd: invalid path")
	// ErrOutsideNamespace: an Admin call named a path outside /zkbench/<id>.
	ErrOutsideNamespace = errors.New("etcd: path outside zkbench's namespace")
	// ErrClosed: the Backend was closed.
	ErrClosed = errors.New("etcd: backend closed")
)

// MinLeaseTTL is etcd's minimum lease TTL: the server raises shorter TTLs to
// about 2 s (1.5 × election timeout), so a shorter setting would lie.
const MinLeaseTTL = 2 * time.Second

// DefaultLeaseTTL is Config.LeaseTTL's default.
const DefaultLeaseTTL = 5 * time.Second

// The static gRPC flow-control windows Config.FlowWindow allows: gRPC
// ignores a window below 64 KiB, and one of 1 GiB is more than any reply.
const (
	MinFlowWindow = 64 << 10
	MaxFlowWindow = 1 << 30
)

// Config says which cluster to reach and how sessions behave.
type Config struct {
	// Endpoints are member client addresses: "host:port", "http://host:port"
	// or "https://host:port". At least one is required.
	Endpoints []string
	// TLS is used when any field is set or an endpoint is https://.
	TLS TLSConfig
	// Username and Password enable etcd authentication when both are set.
	Username, Password string
	// LeaseTTL is each session's lease TTL (default 5s, minimum 2s), rounded
	// up to whole seconds: a session is lost about this long after its client
	// stops reaching the cluster.
	LeaseTTL time.Duration
	// DialTimeout bounds connection set-up and authentication (default 5s).
	DialTimeout time.Duration
	// Conns is an experiment flag. 0 (the default) gives every session its
	// own clientv3.Client, one gRPC connection per simulated client, as a
	// real fleet has. K > 0 makes all sessions share K clients round-robin:
	// cheaper, but their keepalives and watches share K streams, which hides
	// per-client costs from the server. Measured by BenchmarkIdleSessions
	// (1,000 idle sessions, server in another process): about 85 KB of
	// client memory and 55 KB of server memory per session with own
	// clients (11 goroutines each: gRPC's transport and balancer plus
	// clientv3's lease loops; smaller gRPC windows or buffers do not
	// help), about 9 KB and 7 KB with Conns = 10.
	Conns int
	// FlowWindow, when set, is a static gRPC flow-control window of that
	// many bytes for each client's streams and its connection, which
	// turns off gRPC's bandwidth-delay estimation. With it on (0, gRPC's
	// default) a client sends the server a ping whenever a message arrives
	// and no estimation ping is outstanding: on a watch connection that
	// carries sparse events, a ping for each event, which the member reads
	// and acknowledges. At least MinFlowWindow.
	FlowWindow int
	// Embedded says the servers run inside this process (cluster/etcd's
	// StartEmbedded). Their Prometheus registry is the process's own, so
	// Scrape reads one member only, and the CPU and memory it reports are
	// zkbench's own: server cost is not separable.
	Embedded bool
}

// TLSConfig names the files of a TLS client set-up.
type TLSConfig struct {
	CAFile, CertFile, KeyFile string
	// ServerName overrides the name checked in the server certificate.
	ServerName string
	// InsecureSkipVerify accepts any server certificate (testing only).
	InsecureSkipVerify bool
}

func (t TLSConfig) set() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// Option tunes a Backend.
type Option func(*options)

type options struct {
	statusTimeout time.Duration
	closeTimeout  time.Duration
	dialOptions   []grpc.DialOption
	logger        *zap.Logger
}

// DefaultCloseTimeout bounds, unless WithCloseTimeout says otherwise, the
// cleanups a session runs on a fresh context after its caller's ended: the
// lease revoke in Session.Close, and the delete of a sequential node whose
// create may have landed (CreateSequential). A call that needs that cleanup
// can return up to this long after its ctx ended.
const DefaultCloseTimeout = 5 * time.Second

func defaultOptions() options {
	return options{statusTimeout: 3 * time.Second, closeTimeout: DefaultCloseTimeout, logger: zap.NewNop()}
}

// WithStatusTimeout bounds each member's Status probe in Preflight
// (default 3s; the ctx deadline still applies).
func WithStatusTimeout(d time.Duration) Option { return func(o *options) { o.statusTimeout = d } }

// WithCloseTimeout bounds the lease revoke in Session.Close (default 5s).
func WithCloseTimeout(d time.Duration) Option { return func(o *options) { o.closeTimeout = d } }

// WithDialOptions adds gRPC dial options to every client, e.g.
// grpc.WithInitialWindowSize to trade throughput for memory per client.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// WithLogger sets the clients' zap logger (default: zap.NewNop, silent).
func WithLogger(lg *zap.Logger) Option { return func(o *options) { o.logger = lg } }

// endpoint is one validated member address.
type endpoint struct {
	raw    string // as given
	host   string // host:port
	secure bool   // https:// given
}

func parseEndpoint(raw string) (endpoint, error) {
	e := endpoint{raw: raw, host: raw}
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return e, fmt.Errorf("%w: endpoint %q: %v", ErrConfig, raw, err)
		}
		switch u.Scheme {
		case "http":
		case "https":
			e.secure = true
		default:
			return e, fmt.Errorf("%w: endpoint %q: scheme must be http or https", ErrConfig, raw)
		}
		if u.Path != "" && u.Path != "/" {
			return e, fmt.Errorf("%w: endpoint %q: a client URL has no path", ErrConfig, raw)
		}
		e.host = u.Host
	}
	h, p, err := net.SplitHostPort(e.host)
	if err != nil {
		return e, fmt.Errorf("%w: endpoint %q: want host:port: %v", ErrConfig, raw, err)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return e, fmt.Errorf("%w: endpoint %q: port %q is not a number from 1 to 65535", ErrConfig, raw, p)
	}
	if h == "" {
		return e, fmt.Errorf("%w: endpoint %q: empty host", ErrConfig, raw)
	}
	return e, nil
}

// validate checks cfg and fills defaults.
func (cfg *Config) validate() ([]endpoint, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no endpoints", ErrConfig)
	}
	eps := make([]endpoint, 0, len(cfg.Endpoints))
	for _, raw := range cfg.Endpoints {
		e, err := parseEndpoint(raw)
		if err != nil {
			return nil, err
		}
		eps = append(eps, e)
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL < MinLeaseTTL {
		return nil, fmt.Errorf("%w: lease TTL %v is below etcd's minimum lease TTL of %v", ErrConfig, cfg.LeaseTTL, MinLeaseTTL)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.Conns < 0 {
		return nil, fmt.Errorf("%w: conns %d must be 0 (one client per session) or more", ErrConfig, cfg.Conns)
	}
	if cfg.FlowWindow != 0 && (cfg.FlowWindow < MinFlowWindow || cfg.FlowWindow > MaxFlowWindow) {
		return nil, fmt.Errorf("%w: flow window %d bytes: give 0 (gRPC's dynamic window) or %d to %d", ErrConfig,
			cfg.FlowWindow, MinFlowWindow, MaxFlowWindow)
	}
	if (cfg.Username == "") != (cfg.Password == "") {
		return nil, fmt.Errorf("%w: set both username and password, or neither", ErrConfig)
	}
	return eps, nil
}

// ttlSeconds is the lease TTL rounded up to whole seconds.
func (cfg *Config) ttlSeconds() int64 {
	return int64((cfg.LeaseTTL + time.Second - 1) / time.Second)
}

// tlsConfig builds the client TLS config, or nil for plaintext.
func (cfg *Config) tlsConfig(eps []endpoint) (*tls.Config, error) {
	secure := cfg.TLS.set()
	for _, e := range eps {
		secure = secure || e.secure
	}
	if !secure {
		return nil, nil
	}
	t := &tls.Config{ServerName: cfg.TLS.ServerName, InsecureSkipVerify: cfg.TLS.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if cfg.TLS.CAFile != "" {
		pem, err := os.ReadFile(cfg.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: CA file: %v", ErrConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrConfig, cfg.TLS.CAFile)
		}
		t.RootCAs = pool
	}
	if (cfg.TLS.CertFile == "") != (cfg.TLS.KeyFile == "") {
		return nil, fmt.Errorf("%w: set both TLS cert and key files, or neither", ErrConfig)
	}
	if cfg.TLS.CertFile != "" {
		c, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: TLS key pair: %v", ErrConfig, err)
		}
		t.Certificates = []tls.Certificate{c}
	}
	return t, nil
}
