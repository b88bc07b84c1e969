// Package faults injects faults into a zkbench run and observes what the
// clients make of them.
//
// The pieces:
//   - faults/proxy: an in-process TCP proxy per server for network faults
//     (latency with jitter, blackhole cuts, connection resets), per client
//     where clients are tagged;
//   - faults/schedule: the --fault grammar, its parser and the runner that
//     fires faults at their times against a schedule.Target and records them;
//   - this package: the Target over a run's local servers, proxies and
//     sessions (Target), ZooKeeper session watching and forced expiry
//     (ZKSessions), etcd connection watching (WatchEtcdConn), the Backend
//     a faulted run's clients use, and the session timeline
//     (SessionTimeline).
package faults
