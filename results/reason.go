package results

// Status is how a run ended (Run.Status). Its JSON form is the plain string.
type Status string

// Run statuses.
const (
	StatusComplete    Status = "complete"    // every planned case ran to its bound
	StatusInterrupted Status = "interrupted" // stopped by the user or a signal; results so far
	StatusFailed      Status = "failed"      // stopped by an error; results so far
)

// Statuses lists every Status a results file may hold.
func Statuses() []Status { return []Status{StatusComplete, StatusInterrupted, StatusFailed} }

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	return s == StatusComplete || s == StatusInterrupted || s == StatusFailed
}

// StopReason is why a case's measured interval ended (Result.StoppedBy).
// Its JSON form is the plain string.
type StopReason string

// Stop reasons.
const (
	StoppedByOps         StopReason = "ops"         // the operation bound (--ops) was reached
	StoppedByDuration    StopReason = "duration"    // the time bound (--duration) was reached
	StoppedByInterrupted StopReason = "interrupted" // the case's ctx was cancelled (a signal)
	StoppedByError       StopReason = "error"       // an error ended the case early
)

// StopReasons lists every StopReason a results file may hold.
func StopReasons() []StopReason {
	return []StopReason{StoppedByOps, StoppedByDuration, StoppedByInterrupted, StoppedByError}
}

// Valid reports whether r is one of StopReasons.
func (r StopReason) Valid() bool {
	switch r {
	case StoppedByOps, StoppedByDuration, StoppedByInterrupted, StoppedByError:
		return true
	}
	return false
}

// LoadMode is the load model of a run: closed loop (each client issues its
// next operation when the last one ends) or open loop (operations are
// scheduled at Config.Rate, latency measured from the intended start). It is
// not stored: Config.Rate decides it (Config.LoadMode).
type LoadMode string

// Load modes.
const (
	ClosedLoop LoadMode = "closed loop"
	OpenLoop   LoadMode = "open loop"
)

// LoadMode is OpenLoop when c.Rate > 0, else ClosedLoop.
func (c Config) LoadMode() LoadMode {
	if c.Rate > 0 {
		return OpenLoop
	}
	return ClosedLoop
}
