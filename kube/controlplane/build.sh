#!/usr/bin/env bash
# Builds the single-node Kubernetes that the Kubernetes integration tests
# start: a real kube-apiserver, kube-controller-manager, kube-scheduler and
# kubelet from k8s.io/kubernetes and an etcd from go.etcd.io/etcd/server/v3, at
# the versions this module's go.mod names.
# The binaries land in a folder keyed by those versions, by default
# .cache/kube-bin/<key>/ at the repository's root (gitignored): a machine pays
# the build once (about 30 minutes cold on 2 cores, kube-apiserver most of it)
# and again only when a version changes. Prints the folder on its last line.
#
#   kube/controlplane/build.sh [CACHE_ROOT]
#   kube/controlplane/build.sh --dir [CACHE_ROOT]   only print the folder
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
only_dir=0
if [ "${1:-}" = --dir ]; then only_dir=1; shift; fi
cache="${1:-$root/.cache/kube-bin}"
cd "$here"
go="${GO:-go}"

kube="$("$go" list -m -f '{{.Version}}' k8s.io/kubernetes)"
etcd="$("$go" list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
goversion="$("$go" env GOVERSION)"
dir="$cache/kubernetes-$kube-etcd-$etcd-$goversion"
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet etcd)
if [ "$only_dir" = 1 ]; then echo "$dir"; exit 0; fi

have=1
for b in "${bins[@]}"; do [ -x "$dir/$b" ] || have=0; done
if [ "$have" = 1 ]; then
	echo "kube-bins: up to date in $dir" >&2
	echo "$dir"
	exit 0
fi

# The version the binaries report (kubectl version, /version); without it they
# say v0.0.0-master.
minor="${kube#v1.}"; minor="${minor%%.*}"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/kube-bin.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
export CGO_ENABLED=0
echo "kube-bins: building kubernetes $kube and etcd $etcd into $dir (about 30 minutes cold on 2 cores)" >&2
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
	[ -x "$dir/$b" ] && { cp "$dir/$b" "$tmp/$b"; continue; }
	"$go" build -ldflags "$ldflags" -o "$tmp/$b" "k8s.io/kubernetes/cmd/$b"
done
[ -x "$dir/etcd" ] && cp "$dir/etcd" "$tmp/etcd" || "$go" build -ldflags "-s -w" -o "$tmp/etcd" ./cmd/etcd
mkdir -p "$dir"
for b in "${bins[@]}"; do mv "$tmp/$b" "$dir/$b"; done
echo "kube-bins: built in $dir" >&2
echo "$dir"
