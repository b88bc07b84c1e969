#!/usr/bin/env bash
# make bench-watch: zkbench's config workload (persistent variant) beside
# etcd's own `benchmark watch-latency`, in one sitting, on ONE local etcd
# member that `zkbench cluster up` starts: the same member serves both tools.
# At each watcher count (WATCHERS) the tool runs twice, one connection per
# watcher (as zkbench's clients have) and with STREAMS watch streams on one
# connection; then one zkbench run covers every count. watchcompare prints
# the table. The member is stopped at the end, on failure and on Ctrl-C.
#
#   scripts/bench-watch.sh ZKBENCH BENCHMARK WATCHCOMPARE
#
# Settings from the environment: WATCHERS ("100 1000"), RATE (puts a second,
# 20), PUTS (puts a run, 200: 10 s at 20/s), SIZE (bytes, 1024), STREAMS (10),
# OUT (docs/runs/watch-vs-etcd), ZKFLAGS (more zkbench run flags).
set -euo pipefail
zkbench="$1" benchmark="$2" watchcompare="$3"
WATCHERS="${WATCHERS:-100 1000}"
RATE="${RATE:-20}"
PUTS="${PUTS:-200}"
SIZE="${SIZE:-1024}"
STREAMS="${STREAMS:-10}"
OUT="${OUT:-docs/runs/watch-vs-etcd}"
ZKFLAGS="${ZKFLAGS:-}"

# zkbench's run lasts as long as the tool's puts take.
duration="$(( (PUTS + RATE - 1) / RATE ))s"

# The cluster's state in a folder of its own, so that a cluster some other
# command keeps (the default state) is neither reused nor stopped here.
statedir="$(mktemp -d "${TMPDIR:-/tmp}/bench-watch.XXXXXX")"
state="$statedir/cluster-etcd.json"
# The script's own output (fd 3): an interrupt inside a step whose output
# goes to a file still reports the cluster's stop here.
exec 3>&1
stop() {
	rc=$?
	trap - EXIT INT TERM
	if [ -e "$state" ]; then
		"$zkbench" cluster down --state "$state" >&3 2>&1 || rc=1
	fi
	rm -rf "$statedir"
	exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

up="$("$zkbench" cluster up --backend etcd --nodes 1 --state "$state")"
echo "$up"
endpoint="$(sed -n 's/^ *zkbench run --backend etcd --endpoints \([^ ,]*\)$/\1/p' <<<"$up")"
if [ -z "$endpoint" ]; then
	echo "bench-watch: no endpoint in zkbench cluster up's output (above)" >&2
	exit 1
fi

# The commit before this run replaces the kept outputs (which would mark it dirty).
commit="$(git describe --tags --always --dirty 2>/dev/null || echo unknown)"
mkdir -p "$OUT"
rm -rf "$OUT/zkbench" "$OUT"/etcd-watch-latency-*.txt "$OUT/comparison.txt"
head="# make bench-watch, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg) at the start), one local etcd member (zkbench cluster up) at $endpoint"

# tool N NAME CONNS STREAMS: one run of the tool, kept with its command line.
tool() {
	local n="$1" name="$2" conns="$3" streams="$4"
	local file="$OUT/etcd-watch-latency-$n-$name.txt"
	local args=(--endpoints "$endpoint" --conns "$conns" --clients "$conns" --precise
		watch-latency --streams "$streams" --watchers-per-stream "$((n / streams))"
		--put-rate "$RATE" --put-total "$PUTS" --val-size "$SIZE")
	echo "bench-watch: benchmark ${args[*]}"
	# Its standard error (gRPC's log, a progress bar) is shown only if it fails.
	if ! { echo "$head"; echo "# benchmark ${args[*]}"; "$benchmark" "${args[@]}" 2>"$statedir/tool.err"; } >"$file"; then
		tail -n 20 "$statedir/tool.err" >&2
		echo "bench-watch: etcd's benchmark failed (above); its output so far: $file" >&2
		exit 1
	fi
}

clients=""
for n in $WATCHERS; do
	if [ "$((n % STREAMS))" != 0 ]; then
		echo "bench-watch: $n watchers do not split evenly over $STREAMS streams" >&2
		exit 1
	fi
	tool "$n" conns "$n" "$n"
	tool "$n" shared 1 "$STREAMS"
	clients="${clients:+$clients,}$n"
done

# The member is not below zkbench run's process: name it, so that its CPU
# is the server's, not another process's loading the machine.
pid="$(sed -n 's/^ *"pid": \([0-9]*\),*$/\1/p' "$state" | head -n 1)"
# shellcheck disable=SC2086 # ZKFLAGS is a list of flags
"$zkbench" run --backend etcd --endpoints "$endpoint" --server-pids "$endpoint=$pid" --workload config --variants persistent \
	--clients "$clients" --size "$SIZE" --rate "$RATE" --duration "$duration" --warmup 1s \
	$ZKFLAGS -o "$OUT" --run-id zkbench

{ echo "$head"; "$watchcompare" --zkbench "$OUT/zkbench" "$OUT"/etcd-watch-latency-*.txt; } | tee "$OUT/comparison.txt"
