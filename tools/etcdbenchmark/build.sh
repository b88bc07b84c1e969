#!/usr/bin/env bash
# Builds etcd's own benchmark tool (tools/benchmark in etcd's repository, the
# package go.etcd.io/etcd/v3/tools/benchmark) from the root module of etcd at
# the version this module's go.mod names, so that no binary is downloaded. The
# tool lands in a folder keyed by that version and the Go version, by default
# .cache/etcd-benchmark/<key>/benchmark at the repository's root (gitignored):
# a machine pays the build once (a few minutes cold on 2 cores: it compiles
# parts of etcd's server) and again only when a version changes. Prints the
# tool's path on its last line.
#
#   tools/etcdbenchmark/build.sh [CACHE_ROOT]
#   tools/etcdbenchmark/build.sh --path [CACHE_ROOT]   only print the path
#
# The version is etcd's newest root module that the Go module proxy serves
# (v3.6.8 when this was written: it serves none of the v3.7 line, while the
# server zkbench embeds is v3.7.3); the watch-latency command is the same
# code in both lines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
only_path=0
if [ "${1:-}" = --path ]; then only_path=1; shift; fi
cache="${1:-$root/.cache/etcd-benchmark}"
cd "$here"
go="${GO:-go}"

if ! etcd="$("$go" list -m -f '{{.Version}}' go.etcd.io/etcd/v3)"; then
	echo "etcd-benchmark: cannot read etcd's version from $here/go.mod (above); nothing was built" >&2
	exit 1
fi
goversion="$("$go" env GOVERSION)"
bin="$cache/etcd-$etcd-$goversion/benchmark"
if [ "$only_path" = 1 ]; then echo "$bin"; exit 0; fi

if [ -x "$bin" ]; then
	echo "etcd-benchmark: up to date in $bin" >&2
	echo "$bin"
	exit 0
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/etcd-benchmark.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "etcd-benchmark: building go.etcd.io/etcd/v3/tools/benchmark $etcd into $bin" >&2
if ! CGO_ENABLED=0 "$go" build -ldflags "-s -w" -o "$tmp/benchmark" go.etcd.io/etcd/v3/tools/benchmark; then
	echo "etcd-benchmark: the build of etcd's benchmark tool ($etcd, $goversion) failed (above); nothing was cached" >&2
	exit 1
fi
mkdir -p "$(dirname "$bin")"
mv "$tmp/benchmark" "$bin"
echo "etcd-benchmark: built $bin" >&2
echo "$bin"
