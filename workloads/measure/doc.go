// Package measure is how every workload measures a case, apart from what
// it measures: the sessions of a case opened with a ramp and counted by
// backends/instrument (Clients), the case's bounded interval with its
// warm-up and the one decision of why it stopped (Window, Bound, Stop),
// the servers' counters and the load generator's own load scraped at both
// edges and turned into a result's cost and cross-checks (Meter), the
// series of a case, its live progress for a status line (Live) and the
// namespace check after it (FindLeftovers).
//
// It knows nothing of workloads: package workloads drives cases with it.
package measure
