package workloads

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zkbench/zkbench/results"
)

// Parameters of the shared lock workloads (rwlock, revoke). The command
// line sets them with --read-share, --grace, --revoke-every and --cleanup.
const (
	// ParamReadShare: the share of acquisitions that are reads, 0 to 1
	// (each client draws every acquisition's mode). Default 0.9 for
	// rwlock, 0 for revoke.
	ParamReadShare = "read_share"
	// ParamGrace: the forced revoker's wait, from its ask, before it
	// deletes a holder's node (revoke, variant forced). Default 100ms.
	ParamGrace = "grace"
	// ParamRevokeEvery: the revoker's pause between one revocation's end
	// and its next ask (revoke), also its pause after a listing that found
	// no holder. Positive (0 would have the revoker list the lock without
	// a pause). Default 50ms.
	ParamRevokeEvery = "revoke_every"
	// ParamCleanup: how long a revoked holder works (and writes) before it
	// releases (revoke). Default 0.
	ParamCleanup = "cleanup"
)

// paramShare reads a share parameter (0 to 1), def if absent.
func paramShare(cfg results.Config, key string, def float64) (float64, error) {
	s, ok := cfg.Params[key]
	if !ok || s == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return 0, fmt.Errorf("%w: parameter %s=%q: want a share from 0 to 1, such as 0.9", ErrBadCase, key, s)
	}
	return f, nil
}

// paramRevokeEvery reads ParamRevokeEvery: a positive duration, default
// 50ms.
func paramRevokeEvery(cfg results.Config) (time.Duration, error) {
	d, err := paramDuration(cfg, ParamRevokeEvery, 50*time.Millisecond)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: parameter %s=%q: want a positive pause such as 50ms (with none the revoker would list the lock without a break)", ErrBadCase, ParamRevokeEvery, cfg.Params[ParamRevokeEvery])
	}
	return d, nil
}
