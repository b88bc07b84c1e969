package backends

import (
	"sync/atomic"
	"time"
)

// KeepAliveReporter is a Backend that times its sessions' keep-alives
// (ZooKeeper pings, etcd lease keep-alives), so that a case can tell
// whether the client sent them late. Found by type assertion.
type KeepAliveReporter interface {
	// KeepAlives returns the totals since the backend was made, over
	// every session it opened. Safe for concurrent use.
	KeepAlives() KeepAliveCounts
}

// What a KeepAliveRecorder times (KeepAliveCounts.What).
const (
	// KeepAlivePingSent: how long after it was due each keep-alive left
	// the client (ZooKeeper pings, etcd lease keep-alives): the client's
	// own lateness, with each answer's round trip.
	KeepAlivePingSent = "ping sent"
	// KeepAliveResponse: the gap between keep-alive responses beyond their
	// period, which includes the server's answer (etcd leases kept alive
	// by clientv3, in results files written before zkbench sent them).
	KeepAliveResponse = "response"
)

// DurationBounds are the upper bounds of KeepAliveCounts' buckets; the
// last bucket holds everything above the last bound.
var DurationBounds = [...]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
	20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
}

// DurationBuckets counts durations by DurationBounds: bucket i holds those
// at most DurationBounds[i] (and above the bound before); the last holds
// the rest.
type DurationBuckets [len(DurationBounds) + 1]int64

// KeepAliveCounts are a backend's keep-alive totals.
type KeepAliveCounts struct {
	// What was timed: "ping sent" or "response" (see results.KeepAlives).
	What string
	// Interval is the largest keep-alive period seen.
	Interval time.Duration
	// Lateness of each keep-alive and how many were later than
	// KeepAliveLateBound of their interval; Replies the round trips of
	// answered ones, where observable.
	Lateness, Replies DurationBuckets
	Late              int64
}

// Sub returns c - before (Interval and What stay c's).
func (c KeepAliveCounts) Sub(before KeepAliveCounts) KeepAliveCounts {
	d := c
	for i := range d.Lateness {
		d.Lateness[i] -= before.Lateness[i]
		d.Replies[i] -= before.Replies[i]
	}
	d.Late -= before.Late
	return d
}

// KeepAliveLateBound is how late a keep-alive of period interval may run
// before it counts as late: a tenth of the interval, at least 100 ms.
func KeepAliveLateBound(interval time.Duration) time.Duration {
	return max(100*time.Millisecond, interval/10)
}

// KeepAliveRecorder accumulates KeepAliveCounts from many sessions'
// goroutines; its methods are safe for concurrent use and do not block.
type KeepAliveRecorder struct {
	what              string
	interval          atomic.Int64
	late              atomic.Int64
	lateness, replies [len(DurationBounds) + 1]atomic.Int64
}

// NewKeepAliveRecorder returns a recorder of keep-alives of kind what.
func NewKeepAliveRecorder(what string) *KeepAliveRecorder { return &KeepAliveRecorder{what: what} }

func bucket(d time.Duration) int {
	for i, b := range DurationBounds {
		if d <= b {
			return i
		}
	}
	return len(DurationBounds)
}

// Lateness records one keep-alive of period interval that ran late by d
// (0 or less: on time).
func (r *KeepAliveRecorder) Lateness(interval, d time.Duration) {
	for {
		cur := r.interval.Load()
		if int64(interval) <= cur || r.interval.CompareAndSwap(cur, int64(interval)) {
			break
		}
	}
	r.lateness[bucket(max(d, 0))].Add(1)
	if d > KeepAliveLateBound(interval) {
		r.late.Add(1)
	}
}

// Reply records one keep-alive's round trip.
func (r *KeepAliveRecorder) Reply(rtt time.Duration) { r.replies[bucket(max(rtt, 0))].Add(1) }

// Counts returns the totals so far.
func (r *KeepAliveRecorder) Counts() KeepAliveCounts {
	c := KeepAliveCounts{What: r.what, Interval: time.Duration(r.interval.Load()), Late: r.late.Load()}
	for i := range c.Lateness {
		c.Lateness[i] = r.lateness[i].Load()
		c.Replies[i] = r.replies[i].Load()
	}
	return c
}
