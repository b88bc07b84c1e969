package workloads

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

// readShareParam is the shared lock workloads' ParamReadShare, defaulting
// to def.
func readShareParam(def string) Param {
	return Param{Key: ParamReadShare, Type: ParamShare, Default: def, Help: "share of acquisitions that are reads, 0 to 1"}
}
