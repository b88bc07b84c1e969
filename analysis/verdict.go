package analysis

// The verdict a run's summary begins with: the herd in words. For each
// workload and backend, each variant whose class (as its results record
// it) is naive, or neither herd-free nor a baseline (polling, say), is set
// against each herd-free one: notifications and server requests per
// operation at each client count, and how many times more it costs at the
// largest. Baselines (the client libraries' own recipes), and every
// variant of a run that lacks one side of the comparison, are given beside.

import (
	"fmt"
	"strings"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
)

// HerdVerdict says the herd of cases in words: a line a pair of variants
// compared (naive against herd-free), then a line a variant beside.
func HerdVerdict(cases []*Case) []string {
	type place struct {
		workload string
		backend  backends.Kind
		setting  string // pairs compare runs set alike
	}
	order, bySeries := Group(cases)
	var places []place
	byPlace := map[place][]Series{}
	for _, s := range order {
		p := place{s.Workload, s.Backend, s.Setting}
		if _, ok := byPlace[p]; !ok {
			places = append(places, p)
		}
		byPlace[p] = append(byPlace[p], s)
	}
	var out []string
	for _, p := range places {
		var free, against, beside []Series
		for _, s := range byPlace[p] {
			switch s.Class {
			case figures.HerdFree:
				free = append(free, s)
			case figures.Naive, figures.Other:
				against = append(against, s)
			default:
				beside = append(beside, s)
			}
		}
		if len(free) == 0 || len(against) == 0 {
			free, against, beside = nil, nil, byPlace[p]
		}
		where := fmt.Sprintf("%s on %s: ", p.workload, p.backend)
		if p.setting != "" {
			where = fmt.Sprintf("%s on %s (%s): ", p.workload, p.backend, p.setting)
		}
		for _, a := range against {
			for _, f := range free {
				out = append(out, where+herdPair(bySeries[a], bySeries[f]))
			}
		}
		for _, s := range beside {
			out = append(out, where+herdAlone(bySeries[s]))
		}
	}
	return out
}

// herdPair compares sweep a (naive) with sweep f (herd-free), at a's
// client counts: "naive wakes 2.90 / 14.1 / 59.0 watchers an acquisition
// at 10 / 50 / 200 clients, fair (herd-free) 1.00 at each (59x at 200);
// server requests an acquisition 12.0 / 51.0 / 201 against 9.00 at each
// (22x at 200)".
func herdPair(a, f []*Case) string {
	clients := clientsOf(a)
	both := append(append([]*Case(nil), a...), f...)
	var parts []string
	if fig, ok := measuredSide(both, figures.WatchEvents, figures.ServerWatchEvents); ok {
		parts = append(parts, fmt.Sprintf("%s %s, %s %s%s", named(a[0]), notifications(fig, values(a, clients, fig), a[0], clients),
			named(f[0]), atEach(values(f, clients, fig)), ratio(a, f, clients, fig)))
	} else {
		parts = append(parts, fmt.Sprintf("%s against %s: notifications not measured", named(a[0]), named(f[0])))
	}
	if fig, ok := measuredSide(both, figures.ServerRequests, figures.Requests); ok {
		parts = append(parts, fmt.Sprintf("%s %s against %s%s", requests(fig, a[0]), join(values(a, clients, fig)),
			atEach(values(f, clients, fig)), ratio(a, f, clients, fig)))
	}
	return strings.Join(parts, "; ")
}

// herdAlone gives sweep s beside the pairs: "native (baseline) gets 1.11 /
// 1.03 notifications an acquisition from the servers at 10 / 100 clients;
// server requests an acquisition 8.06 / 8.05".
func herdAlone(s []*Case) string {
	clients := clientsOf(s)
	var parts []string
	if fig, ok := measuredSide(s, figures.WatchEvents, figures.ServerWatchEvents); ok {
		parts = append(parts, named(s[0])+" "+notifications(fig, values(s, clients, fig), s[0], clients))
	} else {
		parts = append(parts, fmt.Sprintf("%s: notifications not measured at %s clients", named(s[0]), joinInts(clients)))
	}
	if fig, ok := measuredSide(s, figures.ServerRequests, figures.Requests); ok {
		parts = append(parts, requests(fig, s[0])+" "+join(values(s, clients, fig)))
	}
	return strings.Join(parts, "; ")
}

// notifications says vs, notifications per operation of c's sweep at
// clients, as the side of fig counted them.
func notifications(fig figures.Figure, vs []string, c *Case, clients []int) string {
	if fig.Side == figures.Server {
		return fmt.Sprintf("gets %s notifications %s from the servers at %s clients", join(vs), perUnit(c), joinInts(clients))
	}
	return fmt.Sprintf("wakes %s watchers %s at %s clients", join(vs), perUnit(c), joinInts(clients))
}

// requests names fig's requests per operation: "server requests an
// acquisition".
func requests(fig figures.Figure, c *Case) string {
	if fig.Side == figures.Server {
		return "server requests " + perUnit(c)
	}
	return "requests (client count) " + perUnit(c)
}

// named is the case's variant, with its class where its name does not say
// it: "naive", "fair (herd-free)", "native (baseline)".
func named(c *Case) string {
	if c.Class == "" || string(c.Class) == c.Variant {
		return c.Variant
	}
	return fmt.Sprintf("%s (%s)", c.Variant, c.Class)
}

// perUnit is "an acquisition", "a round": per one of c's operations.
func perUnit(c *Case) string {
	u := string(c.Unit())
	if strings.ContainsAny(u[:1], "aeiou") {
		return "an " + u
	}
	return "a " + u
}

// measuredSide is the first of sides that the most of cs measured; false
// when none measured any.
func measuredSide(cs []*Case, sides ...figures.Figure) (figures.Figure, bool) {
	best, most := figures.Figure{}, 0
	for _, f := range sides {
		n := 0
		for _, c := range cs {
			if _, ok := c.PerOp(f.Key); ok {
				n++
			}
		}
		if n > most {
			best, most = f, n
		}
	}
	return best, most > 0
}

// clientsOf is the number of clients of each case of cs, in order.
func clientsOf(cs []*Case) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.Clients
	}
	return out
}

// at is the case of cs at n clients, nil if none.
func at(cs []*Case, n int) *Case {
	for _, c := range cs {
		if c.Clients == n {
			return c
		}
	}
	return nil
}

// values are figure fig of cs at each of clients, "-" where not measured.
func values(cs []*Case, clients []int, fig figures.Figure) []string {
	out := make([]string, len(clients))
	for i, n := range clients {
		out[i] = unmeasured
		if c := at(cs, n); c != nil {
			if v, ok := c.PerOp(fig.Key); ok {
				out[i] = verdictNum(v)
			}
		}
	}
	return out
}

// ratio is how many times a's figure is f's at the largest client count
// both measured above zero: " (59x at 200)", "" where none.
func ratio(a, f []*Case, clients []int, fig figures.Figure) string {
	for i := len(clients) - 1; i >= 0; i-- {
		ca, cf := at(a, clients[i]), at(f, clients[i])
		if ca == nil || cf == nil {
			continue
		}
		va, oka := ca.PerOp(fig.Key)
		vf, okf := cf.PerOp(fig.Key)
		if !oka || !okf || va <= 0 || vf <= 0 {
			continue
		}
		r := va / vf
		x := fmt.Sprintf("%.1fx", r)
		if r >= 10 {
			x = fmt.Sprintf("%.0fx", r)
		}
		if len(clients) == 1 {
			return " (" + x + ")"
		}
		return fmt.Sprintf(" (%s at %d)", x, clients[i])
	}
	return ""
}

// atEach is vs joined, or "1.00 at each" where every one is the same.
func atEach(vs []string) string {
	if len(vs) < 2 {
		return join(vs)
	}
	for _, v := range vs[1:] {
		if v != vs[0] {
			return join(vs)
		}
	}
	if vs[0] == unmeasured {
		return join(vs)
	}
	return vs[0] + " at each"
}

func join(vs []string) string { return strings.Join(vs, " / ") }

func joinInts(ns []int) string {
	vs := make([]string, len(ns))
	for i, n := range ns {
		vs[i] = fmt.Sprint(n)
	}
	return join(vs)
}

// verdictNum prints a count per operation to 3 significant digits, whole
// from 100: "1.00", "14.1", "296".
func verdictNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
