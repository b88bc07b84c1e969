// Package controlplane is a module of its own (so that k8s.io/kubernetes
// and its staging modules stay out of zkbench's go.mod) that builds a real
// Kubernetes control plane from Go modules: kube-apiserver and
// kube-controller-manager from k8s.io/kubernetes, etcd from
// go.etcd.io/etcd/server/v3 (cmd/etcd), into a gitignored cache
// (build.sh, `make kube-bins`). Its test starts them and applies the
// manifests `zkbench kube job` writes: the real Job controller creates the
// shards' pods, and the test checks each pod's completion index, its
// JOB_COMPLETION_INDEX, image, command and arguments. No scheduler or
// kubelet runs: the pods stay Pending (docs/kubernetes.md).
package controlplane
