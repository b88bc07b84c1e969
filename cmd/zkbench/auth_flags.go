package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/runner"
)

// addAuthFlags registers the flags that say how to reach a secured cluster
// (etcd TLS and user, ZooKeeper digest), shared by `run` and `clean`.
func addAuthFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.StringVar(&f.cacert, "cacert", "", "etcd: CA certificate file")
	fl.StringVar(&f.cert, "cert", "", "etcd: client certificate file")
	fl.StringVar(&f.key, "key", "", "etcd: client key file")
	fl.StringVar(&f.serverName, "tls-server-name", "", "etcd: name to verify in the server certificate")
	fl.BoolVar(&f.insecureSkipTLSVerify, "insecure-skip-tls-verify", false, "etcd: accept any server certificate (testing only)")
	fl.StringVar(&f.user, "user", "", "etcd: user name (with --password)")
	fl.StringVar(&f.password, "password", "", "etcd: password (or ZKBENCH_ETCD_PASSWORD)")
	fl.StringVar(&f.digest, "digest", "", "ZooKeeper: digest authentication user:password")
}

// passwordFromEnv fills in the etcd password and the ZooKeeper digest from
// the environment (runner.PasswordEnv, runner.DigestEnv) when their flags
// were not given.
func (f *runFlags) passwordFromEnv() {
	if f.password == "" {
		f.password = os.Getenv(runner.PasswordEnv)
	}
	if f.digest == "" {
		f.digest = os.Getenv(runner.DigestEnv)
	}
}
