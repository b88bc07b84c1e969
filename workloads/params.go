package workloads

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
	// the next failover, after every waiter has a watch open again (for
	// the variants the instrument sees), so that every waiter is asleep.
	// Default 100ms.
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
