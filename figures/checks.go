package figures

import (
	"fmt"
	"math"

	"github.com/zkbench/zkbench/backends"
)

// Tolerance is how far client and server counts of the same thing may
// differ, as a fraction of the larger, before a result says so.
const Tolerance = 0.05

// Check is a count that the clients and the servers both make: where the
// two differ by more than Tolerance, the result carries a note (Note).
type Check struct {
	// What is counted, as the note names it.
	What string
	// Client says how the workloads' meter counts the client side.
	Client string
	// Metric is the canonical server counter of the server side.
	Metric string
	// Known are the documented reasons (docs/figures.md) for the servers
	// to count more than the clients.
	Known []Known
}

// Known is a documented reason for the servers to count more than the
// clients. It explains a disagreement only when the server count is the
// larger, the case ran on Backend, and, if Request is set, the clients
// sent requests of that type.
type Known struct {
	Backend backends.Kind
	Request string
	Reason  string
}

// The cross-checks the workloads' meter makes on every instrumented case.
var (
	WatchEventsCheck = Check{
		What:   "watch events",
		Client: "notifications delivered to the clients plus those of watches already abandoned (late)",
		Metric: backends.MetricWatchEvents,
		Known: []Known{{
			Backend: backends.Etcd,
			Reason: "etcd counts every event it sends to a watcher, also those sent to one-shot watches " +
				"that are being cancelled, which the clients drop; for the naive lock it also sends the next " +
				"holder's create to waiters still closing their watch",
		}},
	}
	WritesCheck = Check{
		What:   "writes (create+create_seq+delete)",
		Client: "create, create_seq and delete requests",
		Metric: backends.MetricWrites,
		Known: []Known{{
			Backend: backends.ZooKeeper,
			Request: "ensure_path",
			Reason: "EnsurePath of a missing path sends one create per path component, ancestors that exist " +
				"included, and ZooKeeper counts each as a write; the clients count the call once, as ensure_path",
		}},
	}
)

// Checks lists every cross-check.
func Checks() []Check { return []Check{WatchEventsCheck, WritesCheck} }

// Note compares client, the clients' count, with the check's counter in
// server, for a case on backend kind whose clients sent requests (by
// type). It returns "" when the server counter was not scraped or the two
// agree within Tolerance; otherwise the note a result carries, with both
// numbers and, where a Known reason applies, that reason.
func (c Check) Note(kind backends.Kind, client float64, server backends.Metrics, requests map[string]int64) string {
	sv, ok := server[c.Metric]
	if !ok {
		return ""
	}
	hi := math.Max(client, sv)
	if hi == 0 || math.Abs(client-sv)/hi <= Tolerance {
		return ""
	}
	n := fmt.Sprintf("client and server disagree on %s by more than %.0f%%: client %.0f, server %.0f (%s)",
		c.What, Tolerance*100, client, sv, c.Metric)
	if k, ok := c.known(kind, client, sv, requests); ok {
		n += "; known difference (docs/figures.md): " + k.Reason
	}
	return n
}

func (c Check) known(kind backends.Kind, client, server float64, requests map[string]int64) (Known, bool) {
	if server <= client {
		return Known{}, false
	}
	for _, k := range c.Known {
		if k.Backend == kind && (k.Request == "" || requests[k.Request] > 0) {
			return k, true
		}
	}
	return Known{}, false
}
