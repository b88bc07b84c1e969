// Package schedule parses zkbench's --fault specs and fires them at their
// times in a run against a Target (local servers, proxies, worker processes),
// recording every injected fault in the run's timeline.
//
// # Grammar
//
// One fault is
//
//	ACTION[:ARG]@AT[+FOR]
//
// with no spaces. AT is when it starts, counted from the start of the
// measured run; FOR, where allowed, is how long it lasts before the runner
// undoes it. Both are Go durations with a unit and no sign: "10s", "1m30s",
// "1.5s", "250ms"; AT may be "0s". Both are at most 168h. Several faults are
// given as repeated --fault flags or separated by commas.
//
// Indexes count from 0: servers in the order of the cluster's endpoints,
// clients in the order the workload opened them.
//
//	action          ARG            +FOR      effect; undo
//	kill-server     I (server)     optional  SIGKILL server I; restart it
//	restart-server  I (server)     no        restart server I (stop it if it runs, start, wait until it serves)
//	kill-leader     -              optional  SIGKILL the server leading at AT; restart it
//	kill-servers    N (count)      optional  SIGKILL N servers, followers first in index order, then the leader; restart them
//	pause-server    I (server)     required  SIGSTOP server I; SIGCONT
//	partition-server I (server)    optional  cut server I off its peers and its clients (docker: network disconnect); reconnect
//	partition-leader -             optional  partition the server leading at AT; reconnect
//	latency         BASE[±JITTER]  optional  delay every chunk each way by BASE ± JITTER (JITTER <= BASE, "~" may replace "±"); no delay
//	cut-client      C (client)     optional  blackhole client C's connections (its session expires on the server); restore
//	cut-all         -              optional  blackhole every client; restore
//	reset-conns     [C] (client)   no        reset every connection (or client C's) with a TCP RST
//	pause-client    C (client)     required  SIGSTOP client C's worker process; SIGCONT
//	expire-session  C (client)     no        force client C's session to expire on the server
//	kill-client     C (client)     no        SIGKILL client C's worker process (no release, no close); it does not come back
//	kill-holder     -              no        SIGKILL the next worker client that holds the lock mid-work (ledger: after step j<K); it does not come back
//
// Examples: kill-server:1@10s, kill-leader@10s+5s, restart-server:1@20s,
// kill-servers:2@10s+15s, latency:50ms±20ms@5s+10s, cut-client:3@5s+8s,
// reset-conns@12s, pause-client:3@5s+10s, expire-session:3@5s,
// kill-client:0@5s, kill-holder@5s.
//
// A fault without +FOR stays in force until a later fault undoes it
// (restart-server after kill-server) or the run ends: the runner undoes
// everything still in force when the run's context ends, so the cluster is
// left as it was found.
package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrBadSpec is wrapped by every parse and validation error.
var ErrBadSpec = errors.New("schedule: bad fault spec")

// Action names what a fault does.
type Action string

// The actions a fault spec may name.
const (
	KillServer    Action = "kill-server"
	RestartServer Action = "restart-server"
	KillLeader    Action = "kill-leader"
	KillServers   Action = "kill-servers"
	PauseServer   Action = "pause-server"
	// PartitionServer and PartitionLeader need a Target that is a
	// Partitioner (servers in containers: --cluster docker).
	PartitionServer Action = "partition-server"
	PartitionLeader Action = "partition-leader"
	Latency         Action = "latency"
	CutClient       Action = "cut-client"
	CutAll          Action = "cut-all"
	ResetConns      Action = "reset-conns"
	PauseClient     Action = "pause-client"
	ExpireSession   Action = "expire-session"
	// KillClient and KillHolder need a Target that is a Killer (clients
	// in worker processes). Their victims' sessions end on the server
	// only when they time out; the clients do not come back.
	KillClient Action = "kill-client"
	KillHolder Action = "kill-holder"
)

type argKind int

const (
	argNone argKind = iota
	argServer
	argCount
	argClient
	argOptClient
	argLatency
)

type durRule int

const (
	durNo durRule = iota
	durOptional
	durRequired
)

type actionRule struct {
	arg  argKind
	dur  durRule
	form string // usage shown in errors
}

var rules = map[Action]actionRule{
	KillServer:      {argServer, durOptional, "kill-server:I@AT[+FOR]"},
	RestartServer:   {argServer, durNo, "restart-server:I@AT"},
	KillLeader:      {argNone, durOptional, "kill-leader@AT[+FOR]"},
	KillServers:     {argCount, durOptional, "kill-servers:N@AT[+FOR]"},
	PauseServer:     {argServer, durRequired, "pause-server:I@AT+FOR"},
	PartitionServer: {argServer, durOptional, "partition-server:I@AT[+FOR]"},
	PartitionLeader: {argNone, durOptional, "partition-leader@AT[+FOR]"},
	Latency:         {argLatency, durOptional, "latency:BASE[±JITTER]@AT[+FOR]"},
	CutClient:       {argClient, durOptional, "cut-client:C@AT[+FOR]"},
	CutAll:          {argNone, durOptional, "cut-all@AT[+FOR]"},
	ResetConns:      {argOptClient, durNo, "reset-conns[:C]@AT"},
	PauseClient:     {argClient, durRequired, "pause-client:C@AT+FOR"},
	ExpireSession:   {argClient, durNo, "expire-session:C@AT"},
	KillClient:      {argClient, durNo, "kill-client:C@AT"},
	KillHolder:      {argNone, durNo, "kill-holder@AT"},
}

// Actions lists every action, sorted.
func Actions() []Action {
	out := make([]Action, 0, len(rules))
	for a := range rules {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// maxTime bounds AT and FOR, so that AT+FOR cannot overflow.
const maxTime = 168 * time.Hour

// maxIndex bounds server and client indexes and counts.
const maxIndex = 1 << 24

// Fault is one parsed --fault spec.
type Fault struct {
	Action Action
	// Server is the server index of kill-server, restart-server and
	// pause-server; -1 otherwise.
	Server int
	// Count is kill-servers' N; 0 otherwise.
	Count int
	// Client is the client index of cut-client, pause-client,
	// expire-session, kill-client and reset-conns:C; -1 otherwise
	// (reset-conns: all).
	Client int
	// Base and Jitter are latency's delay.
	Base, Jitter time.Duration
	// At is when the fault starts, from the start of the run.
	At time.Duration
	// For is how long it lasts before the runner undoes it; 0 means until
	// undone by another fault or the end of the run (or instant).
	For time.Duration
}

// Name is the fault without its times, e.g. "kill-server:1", "latency:50ms±20ms".
func (f Fault) Name() string {
	switch rules[f.Action].arg {
	case argServer:
		return fmt.Sprintf("%s:%d", f.Action, f.Server)
	case argCount:
		return fmt.Sprintf("%s:%d", f.Action, f.Count)
	case argClient:
		return fmt.Sprintf("%s:%d", f.Action, f.Client)
	case argOptClient:
		if f.Client >= 0 {
			return fmt.Sprintf("%s:%d", f.Action, f.Client)
		}
	case argLatency:
		if f.Jitter > 0 {
			return fmt.Sprintf("%s:%v±%v", f.Action, f.Base, f.Jitter)
		}
		return fmt.Sprintf("%s:%v", f.Action, f.Base)
	}
	return string(f.Action)
}

// String is the fault's canonical spec; Parse(f.String()) returns f.
func (f Fault) String() string {
	s := fmt.Sprintf("%s@%v", f.Name(), f.At)
	if f.For > 0 {
		s += fmt.Sprintf("+%v", f.For)
	}
	return s
}

// End is when the fault is undone (At+For), or At if it has no duration.
func (f Fault) End() time.Duration { return f.At + f.For }

// SpecError says which part of which spec is wrong and what is allowed.
type SpecError struct {
	Spec string // the spec as given
	Part string // the offending part ("" for the whole spec)
	Msg  string
}

func (e *SpecError) Error() string {
	if e.Part == "" {
		return fmt.Sprintf("%v %q: %s", ErrBadSpec, e.Spec, e.Msg)
	}
	return fmt.Sprintf("%v %q: %q: %s", ErrBadSpec, e.Spec, e.Part, e.Msg)
}

// Unwrap makes errors.Is(err, ErrBadSpec) true.
func (e *SpecError) Unwrap() error { return ErrBadSpec }

// Parse parses one fault spec (see the package doc for the grammar).
func Parse(spec string) (Fault, error) {
	bad := func(part, format string, args ...any) (Fault, error) {
		return Fault{}, &SpecError{Spec: spec, Part: part, Msg: fmt.Sprintf(format, args...)}
	}
	if spec == "" {
		return bad("", "empty: want ACTION[:ARG]@AT[+FOR], e.g. kill-server:1@10s+15s")
	}
	if strings.ContainsFunc(spec, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		return bad("", "contains white space: write ACTION[:ARG]@AT[+FOR] with no spaces")
	}
	head, when, ok := strings.Cut(spec, "@")
	if !ok {
		return bad("", "missing @AT (when the fault starts), e.g. %s@10s", spec)
	}
	if strings.Contains(when, "@") {
		return bad(when, "more than one '@': want ACTION[:ARG]@AT[+FOR]")
	}
	name, arg, hasArg := strings.Cut(head, ":")
	a := Action(name)
	rule, known := rules[a]
	if !known {
		return bad(name, "unknown action; allowed: %s", joinActions())
	}
	f := Fault{Action: a, Server: -1, Client: -1}

	switch rule.arg {
	case argNone:
		if hasArg {
			return bad(arg, "%s takes no argument: %s", a, rule.form)
		}
	case argServer, argCount, argClient, argOptClient:
		if !hasArg {
			if rule.arg == argOptClient {
				break
			}
			return bad(head, "%s needs %s: %s", a, argWhat(rule.arg), rule.form)
		}
		n, err := parseIndex(arg)
		if err != nil {
			return bad(arg, "%s must be %s: %v (%s)", a, argWhat(rule.arg), err, rule.form)
		}
		switch rule.arg {
		case argServer:
			f.Server = n
		case argCount:
			if n < 1 {
				return bad(arg, "%s kills at least 1 server", a)
			}
			f.Count = n
		default:
			f.Client = n
		}
	case argLatency:
		if !hasArg || arg == "" {
			return bad(head, "latency needs a delay: %s, e.g. latency:50ms±20ms@5s+10s", rule.form)
		}
		base, jitter, err := parseLatency(arg)
		if err != nil {
			return bad(arg, "%v (%s)", err, rule.form)
		}
		f.Base, f.Jitter = base, jitter
	}

	at, dur, hasDur := strings.Cut(when, "+")
	var err error
	if f.At, err = parseTime(at); err != nil {
		return bad(at, "AT %v", err)
	}
	if hasDur {
		if rule.dur == durNo {
			return bad("+"+dur, "%s is instant and takes no +FOR: %s", a, rule.form)
		}
		if f.For, err = parseTime(dur); err != nil {
			return bad(dur, "FOR %v", err)
		}
		if f.For == 0 {
			return bad(dur, "FOR must be longer than 0")
		}
	} else if rule.dur == durRequired {
		return bad(when, "%s needs +FOR (how long until it is undone): %s", a, rule.form)
	}
	return f, nil
}

// ParseAll parses several specs; each string may hold several specs
// separated by commas. It returns them ordered by start time (stable), or
// every error found, joined.
func ParseAll(specs []string) ([]Fault, error) {
	var (
		out  []Fault
		errs []error
	)
	for _, s := range specs {
		for part := range strings.SplitSeq(s, ",") {
			f, err := Parse(part)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, f)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(out, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
	return out, nil
}

func argWhat(k argKind) string {
	switch k {
	case argServer:
		return "a server index I (0, 1, ...)"
	case argCount:
		return "a number of servers N (1, 2, ...)"
	case argLatency:
		return "a delay BASE[±JITTER]"
	}
	return "a client index C (0, 1, ...)"
}

func joinActions() string {
	as := Actions()
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// parseIndex accepts plain decimal digits only: no sign, no spaces.
func parseIndex(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, errors.New("not a non-negative whole number")
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n >= maxIndex {
		return 0, fmt.Errorf("larger than %d", maxIndex-1)
	}
	return n, nil
}

// parseTime accepts a Go duration with a unit, without a sign, up to maxTime.
func parseTime(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("is empty: want a duration such as 10s or 1m30s")
	}
	if c := s[0]; (c < '0' || c > '9') && c != '.' {
		return 0, errors.New("must start with a digit: want a duration such as 10s or 1m30s")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("is not a duration: want a number with a unit (ns, us, ms, s, m, h) such as 10s or 1m30s")
	}
	if d > maxTime {
		return 0, fmt.Errorf("is longer than %v", maxTime)
	}
	return d, nil
}

func parseLatency(s string) (base, jitter time.Duration, err error) {
	b, j, hasJ := strings.Cut(s, "±")
	if !hasJ {
		b, j, hasJ = strings.Cut(s, "~")
	}
	if base, err = parseTime(b); err != nil {
		return 0, 0, fmt.Errorf("BASE %w", err)
	}
	if hasJ {
		if jitter, err = parseTime(j); err != nil {
			return 0, 0, fmt.Errorf("JITTER %w", err)
		}
	}
	if base == 0 {
		return 0, 0, errors.New("BASE must be longer than 0")
	}
	if jitter > base {
		return 0, 0, fmt.Errorf("JITTER %v must not exceed BASE %v (a delay is never negative)", jitter, base)
	}
	return base, jitter, nil
}
