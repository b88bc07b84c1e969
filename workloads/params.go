package workloads

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zkbench/zkbench/results"
)

// Workload parameters (results.Config.Params) read by the lock, election
// and barrier workloads. The command line sets them with flags of the same
// meaning; every one has a documented default.
const (
	// ParamFailovers: failovers per case when --ops is 0 (failover,
	// observers). Default 10.
	ParamFailovers = "failovers"
	// ParamKill: how a leader's session is ended: "close" (the client
	// closes it: ephemeral nodes go at once) or "expire" (the server ends
	// it without the client's help; the old leader learns late).
	// Default "close".
	ParamKill = "kill"
	// ParamSettle: how long the clients' requests must stay quiet before
	// the next failover, so that every waiter is asleep again. Default
	// 100ms.
	ParamSettle = "settle"
	// ParamCandidates: candidates in the observers workload. Default 3.
	ParamCandidates = "candidates"
	// ParamWork: the computation between a barrier's Enter and Leave.
	// Default 0.
	ParamWork = "work"
	// ParamJitter: spread of the barrier participants: each delays its
	// arrival by a uniform random time in [0, jitter) and computes for work
	// plus another. Without it arrivals and departures come in bursts that
	// the naive barrier's watches coalesce. Default 0.
	ParamJitter = "jitter"
	// ParamRounds: barrier rounds per case when --ops is 0. Default 20.
	ParamRounds = "rounds"
	// ParamStepTimeout: bound on one failover, one observation or one
	// barrier phase before the case gives up. Default 60s. Config: bound on
	// the clients' first read, their catch-up to the last version and a
	// write still in flight when the writer stops; default 30s.
	ParamStepTimeout = "step_timeout"
	// ParamFence: the shared register lock holders write to (lock):
	// FenceOff (default) or FenceOn.
	ParamFence = "fence"
)

// ParamFence values.
const (
	// FenceOff: the register accepts every write; a stale write (a token
	// older than one already granted or written) is a safety violation.
	FenceOff = "off"
	// FenceOn: the register is a fenced store: it rejects a write whose
	// token is older than the newest it accepted (Safety.Prevented). A stale
	// write that arrives before the new holder's first write is accepted
	// and is a violation.
	FenceOn = "on"
)

// paramDuration reads a duration parameter, def if absent.
func paramDuration(cfg results.Config, key string, def time.Duration) (time.Duration, error) {
	s, ok := cfg.Params[key]
	if !ok || s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: parameter %s=%q: want a non-negative duration such as 100ms", ErrBadCase, key, s)
	}
	return d, nil
}

// paramInt reads a positive integer parameter, def if absent.
func paramInt(cfg results.Config, key string, def int) (int, error) {
	s, ok := cfg.Params[key]
	if !ok || s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: parameter %s=%q: want a whole number of at least 1", ErrBadCase, key, s)
	}
	return n, nil
}

// paramString reads a parameter that must be one of allowed (the first is
// the default).
func paramString(cfg results.Config, key string, allowed ...string) (string, error) {
	s, ok := cfg.Params[key]
	if !ok || s == "" {
		return allowed[0], nil
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", fmt.Errorf("%w: parameter %s=%q: want one of %v", ErrBadCase, key, s, allowed)
}

// opsOr is the case's operation bound, or the parameter key (default def)
// when --ops is 0.
func opsOr(cfg results.Config, key string, def int) (int, error) {
	if cfg.Ops > 0 {
		return int(cfg.Ops), nil
	}
	return paramInt(cfg, key, def)
}
