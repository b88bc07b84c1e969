// Command etcd is the etcd server that the control plane test starts for its
// kube-apiserver, built from go.etcd.io/etcd/server/v3 so that no binary has
// to be downloaded.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
