// Package runflags is a run's command line: the flags of `zkbench run`
// bound to a pflag.FlagSet and turned into the runner.Spec they describe,
// and the server flags that exec and clean take from it. The commands
// (cmd/zkbench) add their own help and printing; the runner knows nothing
// of flags but the rules it exports (checkFlagsRead, paramFlags).
package runflags

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// Servers are the flags that say which servers a command uses and how it
// reaches them. Run binds them all; exec and clean bind the ones they read,
// with their own help.
type Servers struct {
	Backend          string
	Endpoints        []string
	Cluster          string
	Nodes            int
	SessionTimeout   time.Duration
	LeaseTTL         time.Duration
	Conns            int
	FlowWindow       int
	PreflightTimeout time.Duration

	// etcd security.
	CACert, Cert, Key, ServerName string
	InsecureSkipTLSVerify         bool
	User, Password                string
	// ZooKeeper authentication.
	Digest string
}

// BindAuth declares the flags that say how to reach a secured cluster
// (etcd TLS and user, ZooKeeper digest).
func (s *Servers) BindAuth(fl *pflag.FlagSet) {
	fl.StringVar(&s.CACert, "cacert", "", "etcd: CA certificate file")
	fl.StringVar(&s.Cert, "cert", "", "etcd: client certificate file")
	fl.StringVar(&s.Key, "key", "", "etcd: client key file")
	fl.StringVar(&s.ServerName, "tls-server-name", "", "etcd: name to verify in the server certificate")
	fl.BoolVar(&s.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "etcd: accept any server certificate (testing only)")
	fl.StringVar(&s.User, "user", "", "etcd: user name (with --password)")
	fl.StringVar(&s.Password, "password", "", "etcd: password (or "+runner.PasswordEnv+")")
	fl.StringVar(&s.Digest, "digest", "", "ZooKeeper: digest authentication user:password")
}

// PasswordFromEnv fills in the etcd password and the ZooKeeper digest from
// the environment (runner.PasswordEnv, runner.DigestEnv) when their flags
// were not given.
func (s *Servers) PasswordFromEnv() {
	if s.Password == "" {
		s.Password = os.Getenv(runner.PasswordEnv)
	}
	if s.Digest == "" {
		s.Digest = os.Getenv(runner.DigestEnv)
	}
}

// Config is the flags as the runner's Servers.
func (s *Servers) Config() runner.Servers {
	return runner.Servers{
		Mode: runner.ClusterMode(s.Cluster), Nodes: s.Nodes, Endpoints: s.Endpoints,
		SessionTimeout: s.SessionTimeout, LeaseTTL: s.LeaseTTL, Conns: s.Conns, FlowWindow: s.FlowWindow,
		TLS: etcdbackend.TLSConfig{
			CAFile: s.CACert, CertFile: s.Cert, KeyFile: s.Key,
			ServerName: s.ServerName, InsecureSkipVerify: s.InsecureSkipTLSVerify,
		},
		Username: s.User, Password: s.Password, Digest: s.Digest,
		PreflightTimeout: s.PreflightTimeout,
	}
}

// Kind is --backend, checked.
func (s *Servers) Kind() (backends.Kind, error) { return runner.ParseBackend(s.Backend, false) }

// CheckRead is checkFlagsRead of the flags set in fl: a flag the
// backend, the servers or the workload of spec (nil: none) would not read
// is refused. preset is --preset's value.
func (s *Servers) CheckRead(fl *pflag.FlagSet, preset string, spec *workloads.Spec) error {
	given := flagsGiven{Backend: s.Backend, Preset: preset, Endpoints: len(s.Endpoints) > 0}
	fl.Visit(func(flag *pflag.Flag) { given.Changed = append(given.Changed, flag.Name) })
	return checkFlagsRead(given, spec)
}

// FlagError is a flag error of command (its path) in words a user acts on:
// a value the flag's type refuses says what the type takes, where the flag
// library would quote a parser ("strconv.ParseInt: parsing ..."); any
// other error points at the command's help.
func FlagError(command string, err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return fmt.Errorf("%w (%s --help lists the flags)", err, command)
	}
	want, ok := map[string]string{
		"int": "a whole number", "int64": "a whole number", "uint64": "a whole number, 0 or more",
		"float64": "a number", "bool": "true or false", "duration": "a duration with its unit, such as 500ms, 5s or 2m",
	}[bad.GetFlag().Value.Type()]
	if !ok {
		return err
	}
	return fmt.Errorf("--%s %q: want %s", bad.GetFlag().Name, bad.GetValue(), want)
}
