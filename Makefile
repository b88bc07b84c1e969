# zkbench build, test and benchmark targets. `make test` is what CI runs.
GO        ?= go
PKGS      ?= ./...
# bash with pipefail: a kept run piped into tee still fails the target.
SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c
# The commit, -dirty when what the binary is built from (Go source, go.mod,
# go.sum, the embedded help and model error) differs from it; docs and kept runs, which the
# kept-run targets rewrite before they rebuild, do not count.
VERSION   ?= $(shell v=$$(git describe --tags --always 2>/dev/null) || { echo dev; exit; }; git diff --quiet HEAD -- '*.go' ':(exclude)*_test.go' go.mod go.sum cmd/zkbench/help analysis/modelerror.md || v=$$v-dirty; echo $$v)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := bin/zkbench
TESTFLAGS ?= -race -count=1 -timeout 20m

.PHONY: build test bench bench-runs bench-scale bench-plan plan-check lint deps images clean docs
.PHONY: bench-idle bench-plan-lock bench-plan-config bench-plan-failover plan-check-files plan-report kube-bins bench-kube kept-runs bench-other bench-kept bench-watchers bench-relist-slow etcd-benchmark bench-watch bench-grpc-window bench-etcd-anchor

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/zkbench

# Tests start their own servers: an embedded etcd in-process, a local
# ZooKeeper from an installed distribution (Debian: apt-get install zookeeper),
# and clusters in Docker containers from the images `make images` builds
# (without them the Docker tests skip, saying why; with CI=true they fail).
# The report's browser test opens report.html in headless Chromium (make deps;
# without it the test skips, with CI=true it fails).
# The Kubernetes tests (kube/controlplane, a module of its own) start a real
# single-node Kubernetes whose binaries kube-bins builds once per machine.
# On a machine where they are not built yet (about 30 minutes of 2 cores; docs/kubernetes.md),
# kube-bins builds them at the lowest CPU priority while the other tests run
# (they leave cores idle while they wait on servers); its output goes to
# $(KUBE_BIN_LOG) and is printed before the Kubernetes test.
KUBE_BIN_LOG ?= .cache/kube-bins.log
test:
	@mkdir -p $(dir $(KUBE_BIN_LOG)); \
	setsid nice -n 19 $(MAKE) --no-print-directory kube-bins >$(KUBE_BIN_LOG) 2>&1 & kb=$$!; \
	trap 'kill -- -$$kb 2>/dev/null' EXIT; \
	echo "make kube-bins: in the background (log: $(KUBE_BIN_LOG))"; \
	echo "$(GO) test $(TESTFLAGS) $(PKGS)"; \
	$(GO) test $(TESTFLAGS) $(PKGS) || exit 1; \
	wait $$kb; rc=$$?; trap - EXIT; cat $(KUBE_BIN_LOG); \
	[ $$rc = 0 ] || { echo "make kube-bins failed (above)" >&2; exit 1; }; \
	echo "cd kube/controlplane && $(GO) test $(TESTFLAGS) ./..."; \
	cd kube/controlplane && $(GO) test $(TESTFLAGS) ./...

# Benchmarks: memory per idle session (1,000 sessions from one process, against
# real servers), the counting decorator's overhead per call, and the client
# overhead of the fair lock: on ZooKeeper beside a bare go-zookeeper loop of the
# same algorithm and beside zk.Lock, on etcd beside concurrency.Mutex, at 100
# and 1,000 clients (ZKBENCH_BENCH_CLIENTS), and the fair shared lock beside
# etcd's RWMutex at 50 and 200 clients, nine reads in ten
# (ZKBENCH_BENCH_RWCLIENTS), side by side in one run: compare the acq/s ratios
# within the run. Also the timings that tests do not assert
# (docs/testing.md): how soon an etcd watch fires after a write amid others.
LOCKBENCH ?= -benchtime 5000x
bench:
	$(GO) test -run '^$$' -bench IdleSessions -benchtime 1x -timeout 30m ./backends/zookeeper/ ./backends/etcd/
	$(GO) test -run '^$$' -bench WatchFireLatency -benchtime 200x ./backends/etcd/
	$(GO) test -run '^$$' -bench . -benchmem ./backends/instrument/
	$(GO) test -run '^$$' -bench '(RW)?Lock(ZooKeeper|Etcd)' $(LOCKBENCH) -timeout 30m ./recipes/fair/

# The kept runs behind docs/results.md: lock sweeps on a local ZooKeeper and
# on the embedded etcd, leader failover at 200 candidates, a double
# barrier sweep, and the shared and revocable lock sweeps. Results, plots and the report land in docs/runs/.
# Every kept run is made with --require-quiet (KEEPFLAGS): a case measured
# while other processes loaded the machine stops the pass, its run marked
# failed, rather than be published (docs/figures.md, loaded machine).
KEEPFLAGS ?= --require-quiet
RUNS     ?= docs/runs
RUNFLAGS ?= --duration 15s --warmup 2s
CONFIGFLAGS ?= --duration 10s --warmup 1s --rate 2 --poll 1s
QUEUEFLAGS ?= --rate 100 --hold 20ms --duration 5s
HANDOFFQUEUEFLAGS ?= --rate 400 --hold 0 --duration 30s
bench-runs: build
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload lock --hold 0 --variants naive,fair,native --clients 10,100,1000 $(RUNFLAGS) -o $(RUNS) --run-id lock-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload lock --hold 0 --variants naive,fair,native --clients 10,100,1000 $(RUNFLAGS) -o $(RUNS) --run-id lock-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload failover --variants naive,fair --clients 200 --failovers 10 -o $(RUNS) --run-id failover-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload failover --variants naive,fair,native --clients 200 --failovers 10 -o $(RUNS) --run-id failover-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload barrier --variants naive,fair --clients 10,25,50,100 --rounds 20 --work 10ms --jitter 200ms --duration 60s -o $(RUNS) --run-id barrier-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload barrier --variants naive,fair --clients 10,25,50,100 --rounds 20 --work 10ms --jitter 200ms --duration 60s -o $(RUNS) --run-id barrier-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload barrier --preset zk-paper-barrier --scale 0.1 -o $(RUNS) --run-id paper-barrier-zookeeper 2>&1 | tee $(RUNS)/paper-barrier-zookeeper.log
	$(BIN) report $(RUNS)/lock-zookeeper $(RUNS)/lock-etcd -o $(RUNS)/lock-report
	# config workload: one writer at 2 updates/s, a size sweep on each backend
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload config --clients 10,100,500 --size 1KB $(CONFIGFLAGS) -o $(RUNS) --run-id config-etcd-1kb
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload config --clients 10,100 --size 64KB $(CONFIGFLAGS) -o $(RUNS) --run-id config-etcd-64kb
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload config --clients 10,100 --size 512KB $(CONFIGFLAGS) -o $(RUNS) --run-id config-etcd-512kb
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload config --clients 10,100 --size 1MB $(CONFIGFLAGS) -o $(RUNS) --run-id config-etcd-1mb
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload config --clients 10,100,500 --size 1KB $(CONFIGFLAGS) -o $(RUNS) --run-id config-zookeeper-1kb
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload config --clients 10,100 --size 64KB $(CONFIGFLAGS) -o $(RUNS) --run-id config-zookeeper-64kb
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload config --clients 10,100 --size 512KB $(CONFIGFLAGS) -o $(RUNS) --run-id config-zookeeper-512kb
	# The shared lock workloads (docs/results.md, shared locks and revocable locks).
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload rwlock --variants naive,fair --clients 10,50,200 --duration 8s --warmup 2s --hold 5ms --read-share 0.9 -o $(RUNS) --run-id rwlock-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload rwlock --variants naive,fair,native --clients 10,50,200 --duration 8s --warmup 2s --hold 5ms --read-share 0.9 -o $(RUNS) --run-id rwlock-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload revoke --variants consent,forced --clients 10,50 --duration 8s --warmup 1s --hold 1s --cleanup 200ms --grace 50ms --revoke-every 20ms -o $(RUNS) --run-id revoke-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload revoke --variants consent,forced --clients 10,50 --duration 8s --warmup 1s --hold 1s --cleanup 200ms --grace 50ms --revoke-every 20ms -o $(RUNS) --run-id revoke-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload revoke --variants forced --clients 10 --duration 8s --warmup 1s --hold 1s --cleanup 200ms --grace 50ms --revoke-every 20ms --fence on -o $(RUNS) --run-id revoke-fenced-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload revoke --variants forced --clients 10 --duration 8s --warmup 1s --hold 1s --cleanup 200ms --grace 50ms --revoke-every 20ms --fence on -o $(RUNS) --run-id revoke-fenced-etcd
# The ledger (docs/faults.md, killing a holder mid-work): 6 clients, five holders killed
# after step 2 of 3, naive against idempotent (and txn on etcd), standalone and 3-node
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload ledger --variants naive,idempotent --clients 6 --duration 40s --warmup 0s --session-timeout 2s --fault kill-holder@2s,kill-holder@8s,kill-holder@14s,kill-holder@20s,kill-holder@26s -o $(RUNS) --run-id ledger-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --nodes 3 --workload ledger --variants naive,idempotent --clients 6 --duration 40s --warmup 0s --session-timeout 2s --fault kill-holder@2s,kill-holder@8s,kill-holder@14s,kill-holder@20s,kill-holder@26s -o $(RUNS) --run-id ledger-zookeeper-3
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload ledger --variants naive,idempotent,txn --clients 6 --duration 40s --warmup 0s --lease-ttl 2s --fault kill-holder@2s,kill-holder@8s,kill-holder@14s,kill-holder@20s,kill-holder@26s -o $(RUNS) --run-id ledger-etcd
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --nodes 3 --workload ledger --variants naive,idempotent,txn --clients 6 --duration 40s --warmup 0s --lease-ttl 2s --fault kill-holder@2s,kill-holder@8s,kill-holder@14s,kill-holder@20s,kill-holder@26s -o $(RUNS) --run-id ledger-etcd-3
# The simple barrier, watched (fair) against polled, at 10, 100 and 500 waiters, and at
# 100 waiters with the barrier up 1s (a polling waiter's requests grow with the wait)
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload simple-barrier --variants polling,fair --clients 10,100,500 --duration 10s -o $(RUNS) --run-id simple-barrier-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload simple-barrier --variants polling,fair --clients 10,100,500 --duration 10s -o $(RUNS) --run-id simple-barrier-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload simple-barrier --variants polling,fair --clients 100 --barrier-up 1s --duration 10s -o $(RUNS) --run-id simple-barrier-wait-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload simple-barrier --variants polling,fair --clients 100 --barrier-up 1s --duration 10s -o $(RUNS) --run-id simple-barrier-wait-etcd
# Two-phase commit, all-watch against coordinated, at 3, 10 and 30 sites; with aborts; with a
# site's session expired mid-run
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload twophase --variants all-watch,coordinated --clients 3,10,30 --vote-spread 500ms --duration 10s -o $(RUNS) --run-id twophase-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload twophase --variants all-watch,coordinated --clients 3,10,30 --vote-spread 500ms --duration 10s -o $(RUNS) --run-id twophase-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload twophase --variants all-watch,coordinated --clients 10 --vote-spread 500ms --abort-share 0.1 --duration 10s -o $(RUNS) --run-id twophase-abort-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload twophase --variants all-watch,coordinated --clients 10 --vote-spread 500ms --duration 10s --fault expire-session:2@3s -o $(RUNS) --run-id twophase-expire-zookeeper
# Group membership, re-list on both backends and etcd's delta, at 10, 100 and 500 members
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload membership --variants relist --clients 10,100,500 --churn 5 --duration 10s -o $(RUNS) --run-id membership-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload membership --variants relist,delta --clients 10,100,500 --churn 5 --duration 10s -o $(RUNS) --run-id membership-etcd
	# queue workload: 10, 50 and 200 consumers, 1 producer at 100 items/s, 20ms a item
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload queue --variants naive,recipe,fair --clients 10,50,200 $(QUEUEFLAGS) -o $(RUNS) --run-id queue-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --workload queue --variants naive,recipe,fair,native --clients 10,50,200 $(QUEUEFLAGS) -o $(RUNS) --run-id queue-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload queue --variants naive,recipe,fair --clients 10,50 --priorities 4 $(QUEUEFLAGS) -o $(RUNS) --run-id queue-priorities-zookeeper
	# the hand-off queue (the queue point a new user first tried: 2 producers at 400 items/s, no hold) from 10 to 1,000 consumers on
	# local servers, beside the herd-free idle line and etcd's recipe, then with 10 producers; and at 100 items/s with
	# the naive queue, where it keeps up
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload queue --variants fair,handoff --clients 10,100,1000 --producers 2 $(HANDOFFQUEUEFLAGS) -o $(RUNS) --run-id queue-handoff-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload queue --variants fair,handoff,native --clients 10,100,1000 --producers 2 $(HANDOFFQUEUEFLAGS) -o $(RUNS) --run-id queue-handoff-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload queue --variants handoff --clients 10,100,1000 --producers 10 $(HANDOFFQUEUEFLAGS) -o $(RUNS) --run-id queue-handoff-p10-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload queue --variants handoff --clients 10,100,1000 --producers 10 $(HANDOFFQUEUEFLAGS) -o $(RUNS) --run-id queue-handoff-p10-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload queue --variants handoff --clients 10,100,1000 --producers 1 $(HANDOFFQUEUEFLAGS) -o $(RUNS) --run-id queue-handoff-p1-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload queue --variants handoff --clients 10,100,1000 --producers 1 $(HANDOFFQUEUEFLAGS) -o $(RUNS) --run-id queue-handoff-p1-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload queue --variants naive,handoff --clients 10,50 --producers 2 --rate 100 --hold 0 --duration 10s -o $(RUNS) --run-id queue-handoff-naive-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload queue --variants naive,handoff,native --clients 10,50 --producers 2 --rate 100 --hold 0 --duration 10s -o $(RUNS) --run-id queue-handoff-naive-etcd

# The kept runs behind the scale section of docs/results.md: the fair lock from
# 1,000 to 10,000 clients on a local ZooKeeper and a local etcd (servers on
# this machine, as a new user runs them), and the naive lock at 10,000 with a
# bounded duration (its herd makes it slow by nature). Run on a quiet machine:
# at 10,000 clients zkbench and the server share the cores with nothing else.
SCALEFLAGS ?= --duration 30s
NAIVEFLAGS ?= --duration 10s
bench-scale: build
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload lock --hold 0 --variants fair --clients 1000,2500,5000,10000 $(SCALEFLAGS) -o $(RUNS) --run-id scale-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload lock --hold 0 --variants fair --clients 1000,2500,5000,10000 $(SCALEFLAGS) -o $(RUNS) --run-id scale-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload lock --hold 0 --variants naive --clients 10000 $(NAIVEFLAGS) -o $(RUNS) --run-id scale-naive-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload lock --hold 0 --variants naive --clients 10000 $(NAIVEFLAGS) -o $(RUNS) --run-id scale-naive-etcd
	$(BIN) report $(RUNS)/scale-zookeeper $(RUNS)/scale-etcd $(RUNS)/scale-naive-zookeeper $(RUNS)/scale-naive-etcd -o $(RUNS)/scale-report
	# The fair lock's handoff against its floor (the calibrated commit plus
	# notification) at 100, 1,000 and 10,000 clients: where each handoff's
	# time goes (release_call, handoff_notify, handoff_decide).
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload lock --hold 0 --variants fair --clients 100,1000,10000 --calibrate $(SCALEFLAGS) -o $(RUNS) --run-id handoff-path-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload lock --hold 0 --variants fair --clients 100,1000,10000 --calibrate $(SCALEFLAGS) -o $(RUNS) --run-id handoff-path-etcd
	# The libraries' own locks back to back beside it (go-zookeeper's zk.Lock,
	# etcd's concurrency.Mutex): the servers' CPU an acquisition and the CPU
	# floor it sets (analysis.CPUFloor), against the fair lock's.
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload lock --hold 0 --variants native --clients 100,1000 --calibrate $(SCALEFLAGS) -o $(RUNS) --run-id handoff-native-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload lock --hold 0 --variants native --clients 100,1000 --calibrate $(SCALEFLAGS) -o $(RUNS) --run-id handoff-native-etcd
	# The same with the lock's default hold (50 ms), as a new user runs it:
	# the calibration then also measures the notify after 50 ms idle
	# (paced_notify_latency), the floor of a handoff that follows a hold.
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload lock --variants fair --clients 100,1000 --calibrate $(SCALEFLAGS) -o $(RUNS) --run-id handoff-paced-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload lock --variants fair --clients 100,1000 --calibrate $(SCALEFLAGS) -o $(RUNS) --run-id handoff-paced-etcd

# Watches at scale: the config center (1 KB and 64 KB, every variant) at
# 1,000, 5,000 and 10,000 watchers, and group membership: the delta variant
# at 1,000, 5,000 and 10,000 members (MEMBERS), the re-listing one at 1,000
# and 5,000 (RELISTERS: it falls apart at 5,000 on one 2-core machine, and
# its 10,000-member attempt took the machine's cores for minutes;
# docs/results.md), on local servers of both backends (servers of their own, so that their CPU
# and live heap are measured apart from zkbench's), and the report whose
# watchers section answers from them. Run on a quiet machine: the config
# lines took 40 minutes of 2 cores (2026-12-04). The config writer's rate is 2 updates a second; a
# backend that cannot carry it at a point shows it as a lower ops/s.
WATCHERS    ?= 1000,5000,10000
WATCHFLAGS  ?= --duration 15s --warmup 2s --rate 2 --poll 1s
MEMBERS     ?= 1000,5000,10000
RELISTERS   ?= 1000,5000
MEMBERFLAGS ?= --duration 15s --churn 1
bench-watchers: build bench-relist-slow
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload config --clients $(WATCHERS) --size 1KB $(WATCHFLAGS) -o $(RUNS) --run-id watchers-zookeeper-1kb
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload config --clients $(WATCHERS) --size 1KB $(WATCHFLAGS) -o $(RUNS) --run-id watchers-etcd-1kb
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload config --clients $(WATCHERS) --size 64KB $(WATCHFLAGS) -o $(RUNS) --run-id watchers-zookeeper-64kb
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload config --clients $(WATCHERS) --size 64KB $(WATCHFLAGS) -o $(RUNS) --run-id watchers-etcd-64kb
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload membership --variants delta --clients $(MEMBERS) $(MEMBERFLAGS) -o $(RUNS) --run-id watchers-membership-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload membership --variants delta --clients $(MEMBERS) $(MEMBERFLAGS) -o $(RUNS) --run-id watchers-membership-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload membership --variants relist --clients $(RELISTERS) $(MEMBERFLAGS) -o $(RUNS) --run-id watchers-relist-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload membership --variants relist --clients $(RELISTERS) $(MEMBERFLAGS) -o $(RUNS) --run-id watchers-relist-etcd
	$(BIN) report $(RUNS)/watchers-zookeeper-1kb $(RUNS)/watchers-etcd-1kb $(RUNS)/watchers-zookeeper-64kb $(RUNS)/watchers-etcd-64kb $(RUNS)/watchers-membership-zookeeper $(RUNS)/watchers-membership-etcd $(RUNS)/watchers-relist-zookeeper $(RUNS)/watchers-relist-etcd $(RUNS)/watchers-relist-slow-zookeeper-5000 $(RUNS)/watchers-relist-slow-zookeeper-10000 $(RUNS)/watchers-relist-slow-zookeeper-10000-80s $(RUNS)/watchers-relist-slow-etcd-2000 -o $(RUNS)/watchers-report

# Re-listing where it falls apart at one change a second (5,000 and 10,000
# members), at a churn the machine can carry: a change makes each of N
# members list N names, so a change every 10 s at 5,000 and every 40 s at
# 10,000 list the same 2.5 million names a second, and every 80 s at 10,000
# half that; about ten changes a case (six at 80 s).
# etcd lists a name at several times ZooKeeper's cost and lost its sessions
# beyond 1,000 members with the auto lease TTL, so its point is 2,000 members,
# a change every 20 s, 30 s leases (docs/results.md, watches at scale). About
# 27 minutes; run it on a quiet machine.
bench-relist-slow: build
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload membership --variants relist --clients 5000 --churn 0.1 --duration 100s -o $(RUNS) --run-id watchers-relist-slow-zookeeper-5000
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload membership --variants relist --clients 10000 --churn 0.025 --duration 400s -o $(RUNS) --run-id watchers-relist-slow-zookeeper-10000
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload membership --variants relist --clients 10000 --churn 0.0125 --duration 480s -o $(RUNS) --run-id watchers-relist-slow-zookeeper-10000-80s
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload membership --variants relist --clients 2000 --churn 0.05 --duration 200s --lease-ttl 30s -o $(RUNS) --run-id watchers-relist-slow-etcd-2000

# The etcd backend's anchor watch side by side (docs/results.md, "The handoff
# against its floor"): the fair lock back to back on a local etcd member, built
# without it (ANCHORBASE, the commit before it, as bin/zkbench-noanchor) and
# with it (this tree), alternating, three times at 100 and 1,000 clients and
# once at 10,000. About 13 minutes; run it on a quiet machine.
ANCHORBASE ?= 04db7e23
ANCHORFLAGS ?= --backend etcd --cluster local --workload lock --hold 0 --variants fair --duration 20s --no-plots
bench-etcd-anchor: build
	rm -rf $(CURDIR)/.anchorbase && git worktree add --detach $(CURDIR)/.anchorbase $(ANCHORBASE)
	cd $(CURDIR)/.anchorbase && $(GO) build -ldflags "-X main.version=$$(git rev-parse --short=8 HEAD)" -o $(CURDIR)/bin/zkbench-noanchor ./cmd/zkbench; \
	  rc=$$?; cd $(CURDIR) && git worktree remove --force $(CURDIR)/.anchorbase; exit $$rc
	for r in 1 2 3; do \
	  bin/zkbench-noanchor run $(KEEPFLAGS) $(ANCHORFLAGS) --clients 100,1000 --calibrate -o $(RUNS) --run-id etcd-anchor-without-$$r && \
	  $(BIN) run $(KEEPFLAGS) $(ANCHORFLAGS) --clients 100,1000 --calibrate -o $(RUNS) --run-id etcd-anchor-with-$$r || exit 1; \
	done
	bin/zkbench-noanchor run $(KEEPFLAGS) $(ANCHORFLAGS) --clients 10000 -o $(RUNS) --run-id etcd-anchor-without-10000
	$(BIN) run $(KEEPFLAGS) $(ANCHORFLAGS) --clients 10000 -o $(RUNS) --run-id etcd-anchor-with-10000

# gRPC's flow control and watch events (docs/results.md): the config
# workload's persistent variant at 1,000 watchers x 1 KB, 20 updates a second,
# on a local etcd member, with gRPC's dynamic window (its bandwidth estimation
# pings the member for nearly every event a quiet connection receives) and
# with a static 1 MB window (--grpc-window 1MB), twice each, alternating;
# then every config variant at 10,000 watchers x 64 KB (bench-watchers' etcd
# point that lost sessions) with each window. About 16 minutes; run it on a
# quiet machine.
GRPCWINDOWFLAGS ?= --backend etcd --cluster local --workload config --variants persistent --clients 1000 --size 1KB --rate 20 --duration 30s --warmup 2s
bench-grpc-window: build
	$(BIN) run $(KEEPFLAGS) $(GRPCWINDOWFLAGS) -o $(RUNS) --run-id grpc-window-dynamic-1
	$(BIN) run $(KEEPFLAGS) $(GRPCWINDOWFLAGS) --grpc-window 1MB -o $(RUNS) --run-id grpc-window-static-1
	$(BIN) run $(KEEPFLAGS) $(GRPCWINDOWFLAGS) -o $(RUNS) --run-id grpc-window-dynamic-2
	$(BIN) run $(KEEPFLAGS) $(GRPCWINDOWFLAGS) --grpc-window 1MB -o $(RUNS) --run-id grpc-window-static-2
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload config --clients 10000 --size 64KB $(WATCHFLAGS) -o $(RUNS) --run-id grpc-window-dynamic-64kb
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload config --clients 10000 --size 64KB $(WATCHFLAGS) --grpc-window 1MB -o $(RUNS) --run-id grpc-window-static-64kb

# Capacity planning: closed-loop sweeps at 1 to 64 clients with a
# calibration (the USL fits and zkbench plan's basis), then the model's
# validation grid: each zkbench plan --validate runs its predicted point
# (open loop with --every, closed loop with --think) and prints predicted
# against measured as it runs (the naive etcd points at 8 clients: the
# sweep's naive etcd cases from 8 on starve the machine, and plan does not
# extrapolate past twice the largest measured one); make plan-check then writes the kept
# comparisons (docs/results.md).
PLANVAL = --duration 10s --warmup 2s --cluster local --validate $(KEEPFLAGS) -o $(RUNS)
# The idle runs: one client, open loop at 10, 30 and 100 acquisitions/s, from
# which plan draws the uncontended acquires at a workload's rate (an acquire
# after a sleep pays wake-ups a closed loop does not); the grid's points (25
# and 50 a second) are between them, none at a rate measured.
IDLERATES = 10 30 100
IDLE_ZK = $(foreach r,$(IDLERATES),$(RUNS)/idle-zookeeper-r$(r))
IDLE_ETCD = $(foreach r,$(IDLERATES),$(RUNS)/idle-etcd-r$(r))
bench-idle: build
	for r in $(IDLERATES); do \
	  $(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload lock --hold 0 --variants naive,fair --clients 1 --rate $$r --duration 30s --warmup 2s -o $(RUNS) --run-id idle-zookeeper-r$$r || exit 1; \
	  $(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload lock --hold 0 --variants naive,fair --clients 1 --rate $$r --duration 30s --warmup 2s -o $(RUNS) --run-id idle-etcd-r$$r || exit 1; \
	done
# make bench-plan makes every plan's kept runs: the lock's, the config
# center's and the leader failover's.
bench-plan: bench-plan-lock bench-plan-config bench-plan-failover
bench-plan-lock: build bench-idle
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload lock --hold 0 --variants naive,fair --clients 1,2,4,8,16,32,64 --duration 5s --warmup 1s --calibrate -o $(RUNS) --run-id usl-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload lock --hold 0 --variants naive,fair --clients 1,2,4,8,16,32,64 --duration 5s --warmup 1s --calibrate -o $(RUNS) --run-id usl-etcd
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 2ms $(PLANVAL) --run-id plan-zk-fair-u20
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 8ms $(PLANVAL) --run-id plan-zk-fair-u50
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 16ms $(PLANVAL) --run-id plan-zk-fair-u90
	$(BIN) plan $(RUNS)/usl-zookeeper --variant naive --clients 20 --every 400ms --hold 2ms $(PLANVAL) --run-id plan-zk-naive-u65
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --think 400ms --hold 8ms $(PLANVAL) --run-id plan-zk-fair-think
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 1ms $(PLANVAL) --run-id plan-etcd-fair-u20
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 7ms $(PLANVAL) --run-id plan-etcd-fair-u50
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 15ms $(PLANVAL) --run-id plan-etcd-fair-u90
	$(BIN) plan $(RUNS)/usl-etcd --variant naive --clients 8 --every 160ms --hold 1ms $(PLANVAL) --run-id plan-etcd-naive-u80
	$(BIN) plan $(RUNS)/usl-zookeeper --variant naive --clients 20 --every 800ms --hold 1ms $(PLANVAL) --run-id plan-zk-naive-low
	$(BIN) plan $(RUNS)/usl-etcd --variant naive --clients 8 --every 320ms --hold 1ms $(PLANVAL) --run-id plan-etcd-naive-low

# The config center's plan (zkbench plan --workload config): sweeps of the
# watching variants at 10, 25 and 60 watchers, 1KB and 16KB, 2 and 10
# updates/s (FANOUT_UPDATES updates a case, so that a case's p99 is not
# its slowest update; beyond 60 watchers the one-shot variant is
# client-bound on this machine), then three validation points a backend
# and variant between them, none measured by the sweeps
# (ID:WATCHERS:SIZE:RATE:DURATION, about as many updates). make
# plan-check writes the comparisons (docs/results.md).
FANOUT_RATES = 2 10
FANOUT_SIZES = 1kb 16kb
FANOUT_ZK = $(foreach r,$(FANOUT_RATES),$(foreach s,$(FANOUT_SIZES),$(RUNS)/fanout-zookeeper-$(s)-r$(r)))
FANOUT_ETCD = $(foreach r,$(FANOUT_RATES),$(foreach s,$(FANOUT_SIZES),$(RUNS)/fanout-etcd-$(s)-r$(r)))
FANOUT_UPDATES = 180
FANOUT_POINTS = a:40:4KB:5:36s b:15:8KB:3:60s c:50:12KB:8:23s
bench-plan-config: build
	for r in $(FANOUT_RATES); do for s in $(FANOUT_SIZES); do \
	  $(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload config --variants one-shot --clients 10,25,60 --size $$s --rate $$r --duration $$(($(FANOUT_UPDATES) / r))s --warmup 2s --poll 1s -o $(RUNS) --run-id fanout-zookeeper-$$s-r$$r || exit 1; \
	  $(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload config --variants one-shot,persistent --clients 10,25,60 --size $$s --rate $$r --duration $$(($(FANOUT_UPDATES) / r))s --warmup 2s --poll 1s -o $(RUNS) --run-id fanout-etcd-$$s-r$$r || exit 1; \
	done; done
	for pt in $(FANOUT_POINTS); do IFS=: read id n size rate dur <<< "$$pt"; \
	  $(BIN) plan $(FANOUT_ZK) --workload config --variant one-shot --clients $$n --size $$size --rate $$rate $(PLANVAL) --duration $$dur --run-id plan-config-zk-one-shot-$$id || exit 1; \
	  for v in one-shot persistent; do \
	    $(BIN) plan $(FANOUT_ETCD) --workload config --variant $$v --clients $$n --size $$size --rate $$rate $(PLANVAL) --duration $$dur --run-id plan-config-etcd-$$v-$$id || exit 1; \
	  done; \
	done

# A leader's failover plan (zkbench plan --workload failover): sweeps of
# the election variants with the leader's session closed (the handover once
# a session has ended) at 10, 50 and 200 candidates, 30 failovers a case;
# then validation points with the leader's process dying (--kill crash), at
# candidate counts and session timeouts the sweeps did not run
# (ID:VARIANT:CANDIDATES:TIMEOUT). make plan-check writes the comparisons
# (docs/results.md).
FAILOVER_POINTS = a:fair:30:3s b:fair:100:5s c:fair:20:2s d:naive:70:4s
FAILVAL = --cluster local --validate --failovers 20 $(KEEPFLAGS) -o $(RUNS)
bench-plan-failover: build
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --workload failover --variants naive,fair --clients 10,50,200 --failovers 30 -o $(RUNS) --run-id handover-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster local --workload failover --variants naive,fair,native --clients 10,50,200 --failovers 30 -o $(RUNS) --run-id handover-etcd
	for pt in $(FAILOVER_POINTS); do IFS=: read id v n t <<< "$$pt"; \
	  $(BIN) plan $(RUNS)/handover-zookeeper --workload failover --variant $$v --clients $$n --session-timeout $$t $(FAILVAL) --run-id plan-failover-zk-$$v-$$id || exit 1; \
	  $(BIN) plan $(RUNS)/handover-etcd --workload failover --variant $$v --clients $$n --session-timeout $$t $(FAILVAL) --run-id plan-failover-etcd-$$v-$$id || exit 1; \
	done

# The kept runs of docs/docker.md (3-node clusters in containers: make images
# first), docs/sharding.md (four shards on this machine, merged) and
# docs/faults.md (a leader killed and restarted, a client cut off).
bench-other: build
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster docker --nodes 3 --workload lock --hold 0 --variants naive,fair,native --clients 10,100,1000 --duration 15s --warmup 2s -o $(RUNS) --run-id lock-docker-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster docker --nodes 3 --workload lock --hold 0 --variants naive,fair,native --clients 10,100,1000 --duration 15s --warmup 2s -o $(RUNS) --run-id lock-docker-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster docker --nodes 3 --workload lock --hold 0 --variants fair --clients 20 --duration 20s --fence on --fault partition-leader@5s+5s -o $(RUNS) --run-id partition-docker-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster docker --nodes 3 --workload lock --hold 0 --variants fair --clients 20 --duration 20s --fence on --fault partition-leader@5s+5s -o $(RUNS) --run-id partition-docker-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster docker --nodes 3 --workload ledger --variants naive,idempotent --clients 6 --duration 40s --warmup 0s --session-timeout 2s --fault kill-holder@2s,kill-holder@8s,kill-holder@14s,kill-holder@20s,kill-holder@26s -o $(RUNS) --run-id ledger-docker-zookeeper
	$(BIN) run $(KEEPFLAGS) --backend etcd --cluster docker --nodes 3 --workload ledger --variants naive,idempotent,txn --clients 6 --duration 40s --warmup 0s --lease-ttl 2s --fault kill-holder@2s,kill-holder@8s,kill-holder@14s,kill-holder@20s,kill-holder@26s -o $(RUNS) --run-id ledger-docker-etcd
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --shards 4 --clients 2000 --variants naive,fair --hold 0 --duration 15s --warmup 2s -o $(RUNS) --run-id lock-zookeeper-shards4 2>&1 | tee $(RUNS)/lock-zookeeper-shards4.log
	$(BIN) run $(KEEPFLAGS) --backend zookeeper --cluster local --nodes 3 --workload lock --hold 0 --variants fair --clients 20 --duration 20s --fence on --fault kill-leader@5s+5s --fault cut-client:3@12s+6s -o $(RUNS) --run-id fault-zk

# make bench's output kept (docs/runs/bench.txt, headed by its date and
# commit): docs/results.md's session-cost, lock-benchmark and decorator
# tables are written from it.
bench-kept:
	{ echo "# make bench, $$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(VERSION), $$(nproc) cores; nothing else should run beside it"; \
	  $(MAKE) --no-print-directory bench 2>&1; } | tee $(RUNS)/bench.txt.new
	mv $(RUNS)/bench.txt.new $(RUNS)/bench.txt

# Every kept run in one pass (about 60 minutes on 2 cores: 2026-12-04), each refusing a
# loaded machine, then the published tables written again from them. Run it
# on a quiet machine: nothing else, not even a build, beside it.
kept-runs: bench-runs bench-scale bench-watchers bench-plan plan-check bench-other bench-kept docs

# The plan model against the kept validation runs, without servers: each
# <run-id>.plan.txt predicts from the USL sweep alone, each
# <run-id>.service.plan.txt draws the service from the lowest-utilisation
# open-loop run of its backend and variant (--service-from), each
# <run-id>.idle.plan.txt adds the idle runs (bench-idle) to the sweep
# (docs/results.md).
# Each plan prints the model's error from analysis/modelerror.md, which make
# docs writes from these files: so they are written, the table made from
# them, the binary built with it, and they are written again.
plan-check:
	$(MAKE) --no-print-directory plan-check-files
	$(BIN) docs analysis/modelerror.md
	$(MAKE) --no-print-directory plan-check-files plan-report
# The report of the watch plans' kept runs: each config case beside the
# model's prediction of it from the other cases, and each crashed leader's
# failover beside the failover model (docs/results.md).
plan-report: build
	$(BIN) report $(RUNS)/fanout-* $(RUNS)/plan-config-*[abc] $(RUNS)/handover-zookeeper $(RUNS)/handover-etcd $(RUNS)/plan-failover-*[abcd] -o $(RUNS)/plan-report
plan-check-files: build
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 2ms --against $(RUNS)/plan-zk-fair-u20 > $(RUNS)/plan-zk-fair-u20.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper $(IDLE_ZK) --variant fair --clients 20 --every 400ms --hold 2ms --against $(RUNS)/plan-zk-fair-u20 > $(RUNS)/plan-zk-fair-u20.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 2ms --service-from $(RUNS)/plan-zk-fair-u20 --against $(RUNS)/plan-zk-fair-u20 > $(RUNS)/plan-zk-fair-u20.service.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 8ms --against $(RUNS)/plan-zk-fair-u50 > $(RUNS)/plan-zk-fair-u50.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper $(IDLE_ZK) --variant fair --clients 20 --every 400ms --hold 8ms --against $(RUNS)/plan-zk-fair-u50 > $(RUNS)/plan-zk-fair-u50.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 8ms --service-from $(RUNS)/plan-zk-fair-u20 --against $(RUNS)/plan-zk-fair-u50 > $(RUNS)/plan-zk-fair-u50.service.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 16ms --against $(RUNS)/plan-zk-fair-u90 > $(RUNS)/plan-zk-fair-u90.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper $(IDLE_ZK) --variant fair --clients 20 --every 400ms --hold 16ms --against $(RUNS)/plan-zk-fair-u90 > $(RUNS)/plan-zk-fair-u90.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --every 400ms --hold 16ms --service-from $(RUNS)/plan-zk-fair-u20 --against $(RUNS)/plan-zk-fair-u90 > $(RUNS)/plan-zk-fair-u90.service.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant naive --clients 20 --every 400ms --hold 2ms --against $(RUNS)/plan-zk-naive-u65 > $(RUNS)/plan-zk-naive-u65.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper $(IDLE_ZK) --variant naive --clients 20 --every 400ms --hold 2ms --against $(RUNS)/plan-zk-naive-u65 > $(RUNS)/plan-zk-naive-u65.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --think 400ms --hold 8ms --against $(RUNS)/plan-zk-fair-think > $(RUNS)/plan-zk-fair-think.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper $(IDLE_ZK) --variant fair --clients 20 --think 400ms --hold 8ms --against $(RUNS)/plan-zk-fair-think > $(RUNS)/plan-zk-fair-think.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant fair --clients 20 --think 400ms --hold 8ms --service-from $(RUNS)/plan-zk-fair-u20 --against $(RUNS)/plan-zk-fair-think > $(RUNS)/plan-zk-fair-think.service.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 1ms --against $(RUNS)/plan-etcd-fair-u20 > $(RUNS)/plan-etcd-fair-u20.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd $(IDLE_ETCD) --variant fair --clients 20 --every 400ms --hold 1ms --against $(RUNS)/plan-etcd-fair-u20 > $(RUNS)/plan-etcd-fair-u20.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 1ms --service-from $(RUNS)/plan-etcd-fair-u20 --against $(RUNS)/plan-etcd-fair-u20 > $(RUNS)/plan-etcd-fair-u20.service.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 7ms --against $(RUNS)/plan-etcd-fair-u50 > $(RUNS)/plan-etcd-fair-u50.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd $(IDLE_ETCD) --variant fair --clients 20 --every 400ms --hold 7ms --against $(RUNS)/plan-etcd-fair-u50 > $(RUNS)/plan-etcd-fair-u50.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 7ms --service-from $(RUNS)/plan-etcd-fair-u20 --against $(RUNS)/plan-etcd-fair-u50 > $(RUNS)/plan-etcd-fair-u50.service.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 15ms --against $(RUNS)/plan-etcd-fair-u90 > $(RUNS)/plan-etcd-fair-u90.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd $(IDLE_ETCD) --variant fair --clients 20 --every 400ms --hold 15ms --against $(RUNS)/plan-etcd-fair-u90 > $(RUNS)/plan-etcd-fair-u90.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd --variant fair --clients 20 --every 400ms --hold 15ms --service-from $(RUNS)/plan-etcd-fair-u20 --against $(RUNS)/plan-etcd-fair-u90 > $(RUNS)/plan-etcd-fair-u90.service.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd --variant naive --clients 8 --every 160ms --hold 1ms --against $(RUNS)/plan-etcd-naive-u80 > $(RUNS)/plan-etcd-naive-u80.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd $(IDLE_ETCD) --variant naive --clients 8 --every 160ms --hold 1ms --against $(RUNS)/plan-etcd-naive-u80 > $(RUNS)/plan-etcd-naive-u80.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper --variant naive --clients 20 --every 800ms --hold 1ms --against $(RUNS)/plan-zk-naive-low > $(RUNS)/plan-zk-naive-low.plan.txt
	$(BIN) plan $(RUNS)/usl-zookeeper $(IDLE_ZK) --variant naive --clients 20 --every 800ms --hold 1ms --against $(RUNS)/plan-zk-naive-low > $(RUNS)/plan-zk-naive-low.idle.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd --variant naive --clients 8 --every 320ms --hold 1ms --against $(RUNS)/plan-etcd-naive-low > $(RUNS)/plan-etcd-naive-low.plan.txt
	$(BIN) plan $(RUNS)/usl-etcd $(IDLE_ETCD) --variant naive --clients 8 --every 320ms --hold 1ms --against $(RUNS)/plan-etcd-naive-low > $(RUNS)/plan-etcd-naive-low.idle.plan.txt
	for pt in $(FANOUT_POINTS); do IFS=: read id n size rate dur <<< "$$pt"; \
	  $(BIN) plan $(FANOUT_ZK) --workload config --variant one-shot --clients $$n --size $$size --rate $$rate --against $(RUNS)/plan-config-zk-one-shot-$$id > $(RUNS)/plan-config-zk-one-shot-$$id.plan.txt || exit 1; \
	  for v in one-shot persistent; do \
	    $(BIN) plan $(FANOUT_ETCD) --workload config --variant $$v --clients $$n --size $$size --rate $$rate --against $(RUNS)/plan-config-etcd-$$v-$$id > $(RUNS)/plan-config-etcd-$$v-$$id.plan.txt || exit 1; \
	  done; \
	done
	for pt in $(FAILOVER_POINTS); do IFS=: read id v n t <<< "$$pt"; \
	  $(BIN) plan $(RUNS)/handover-zookeeper --workload failover --variant $$v --clients $$n --session-timeout $$t --against $(RUNS)/plan-failover-zk-$$v-$$id > $(RUNS)/plan-failover-zk-$$v-$$id.plan.txt || exit 1; \
	  $(BIN) plan $(RUNS)/handover-etcd --workload failover --variant $$v --clients $$n --session-timeout $$t --against $(RUNS)/plan-failover-etcd-$$v-$$id > $(RUNS)/plan-failover-etcd-$$v-$$id.plan.txt || exit 1; \
	done

# The Docker images, built without a registry (docs/docker.md): ZooKeeper from
# Debian's packages (mmdebstrap + docker import), zkbench FROM scratch. Tagged
# :$(VERSION) and :latest; an image whose inputs did not change is not rebuilt.
images:
	docker/images.sh $(VERSION)

# The single-node Kubernetes of the Kubernetes tests (docs/kubernetes.md):
# kube-apiserver, kube-controller-manager, kube-scheduler and kubelet from
# k8s.io/kubernetes, etcd from its server module, built into
# $(KUBE_BIN_CACHE)/<versions>/ (gitignored): about 20
# minutes cold on 2 cores, then nothing until a version in
# kube/controlplane/go.mod changes.
KUBE_BIN_CACHE ?= .cache/kube-bin
kube-bins:
	GO=$(GO) kube/controlplane/build.sh $(abspath $(KUBE_BIN_CACHE))

# Scale on the single-node Kubernetes (docs/kubernetes-clusters.md): the
# naive and fair lock with 10,000 clients over 4 shard pods (zkbench kube run)
# and from one process, side by side on one ZooKeeper, kept in $(RUNS) as
# kube-scale-zookeeper and kube-scale-zookeeper-1proc. Needs root, make deps,
# make images (at this commit: the pods run zkbench/zkbench:latest) and make
# kube-bins; about 10 minutes; run it on a quiet machine.
bench-kube: build kube-bins
	cd kube/controlplane && ZKBENCH_KUBE_SCALE=$(abspath $(RUNS)) ZKBENCH_BIN=$(abspath $(BIN)) $(GO) test -count=1 -timeout 60m -run TestScaleOnANode -v . \
		>$(abspath $(RUNS))/kube-scale.log 2>&1; rc=$$?; grep -v '^        [IWE][0-9]' $(abspath $(RUNS))/kube-scale.log | tail -80; exit $$rc

# etcd's own benchmark tool (tools/benchmark in etcd's repository), built from
# etcd's root module at the version tools/etcdbenchmark/go.mod names into
# $(ETCD_BENCH_CACHE)/<versions>/benchmark (gitignored): a few minutes cold,
# then nothing until that version or Go's changes.
ETCD_BENCH_CACHE ?= .cache/etcd-benchmark
etcd-benchmark:
	GO=$(GO) tools/etcdbenchmark/build.sh $(abspath $(ETCD_BENCH_CACHE))

# The config workload's persistent variant beside etcd's `benchmark
# watch-latency`, in one sitting on one local etcd member (zkbench cluster
# up, stopped at the end): 100 and 1,000 watchers x 1 KB at 20 puts a second,
# the tool with one connection per watcher and with 10 streams on one
# connection, then the p50/p99 of each and the ratio of the p99s
# (docs/results.md, zkbench beside etcd's watch benchmark). Raw outputs, the
# zkbench run and the table land in $(RUNS)/watch-vs-etcd. About 20 minutes;
# run it on a quiet machine.
WATCHCOMPARE := bin/watchcompare
# 4,000 puts a run (200 s at 20 a second): the tool's first 20 puts go out
# at once and are measured, and at 1,000 watchers they are 20,000 events;
# in 4 million they stay outside its p99.
WATCHPUTS ?= 4000
bench-watch: build etcd-benchmark
	$(GO) build -o $(WATCHCOMPARE) ./cmd/watchcompare
	OUT=$(RUNS)/watch-vs-etcd PUTS=$(WATCHPUTS) ZKFLAGS="$(KEEPFLAGS)" scripts/bench-watch.sh $(BIN) \
		"$$(GO=$(GO) tools/etcdbenchmark/build.sh --path $(abspath $(ETCD_BENCH_CACHE)))" $(WATCHCOMPARE)

# The tables README.md and docs/results.md publish, written again from the kept
# runs' results files (no servers); docsgen's test fails when one differs.
docs: build
	$(BIN) docs README.md docs/results.md docs/docker.md docs/sharding.md docs/faults.md analysis/modelerror.md

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd kube/controlplane && $(GO) vet ./...
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck $(PKGS); else echo "staticcheck not installed; skipped"; fi

# Installs what the tests need on Debian: Java is assumed present, ZooKeeper,
# mmdebstrap (for `make images`), Chromium (the report's browser test opens
# report.html in it, headless), and for the Kubernetes node test containerd,
# runc and the CNI plugins (bridge, host-local, loopback) are not.
deps:
	@if [ ! -e /usr/share/java/zookeeper.jar ] && [ -z "$$ZOOKEEPER_HOME" ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper; fi
	@if ! command -v mmdebstrap >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap; fi
	@if ! command -v chromium >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi
	@if [ ! -x /usr/lib/cni/bridge ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containernetworking-plugins; fi
	@command -v containerd >/dev/null && command -v runc >/dev/null || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd runc; }
	$(GO) mod download

clean:
	rm -rf bin
