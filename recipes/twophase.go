package recipes

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
)

// ErrTxBroken: a two-phase commit participant's session ended before it
// knew the decision; errors wrapping it also wrap backends.ErrSessionLost.
var ErrTxBroken = errors.New("recipes: transaction broken")

// Decision is a two-phase commit's outcome.
type Decision string

// Decisions.
const (
	Commit Decision = "commit"
	Abort  Decision = "abort"
)

// The layout of one transaction at <path>, shared by every variant: the
// coordinator makes <path>, <path>/sites and <path>/votes (persistent);
// site i, on receiving the transaction, makes its ephemeral presence node
// <path>/sites/<i> and then its ephemeral vote <path>/votes/<i>-commit or
// <i>-abort (the vote is in the name, so one listing reads every vote); a
// coordinator that decides makes the ephemeral <path>/decision, whose data
// is the Decision.
const (
	TxSites    = "sites"
	TxVotes    = "votes"
	TxDecision = "decision"
)

// TxCoordinator is the two-phase commit's coordinator for one transaction of
// n sites. It is used by one goroutine.
type TxCoordinator interface {
	// Begin makes the transaction's nodes; call it before any site joins.
	Begin(ctx context.Context) error
	// Decide blocks until the transaction is decided, ctx is done or the
	// session is lost (ErrTxBroken). A coordinator that decides (the
	// coordinated variant) watches the sites and votes, decides and writes
	// the decision; one that does not (all-watch, where every site decides
	// for itself) returns "" and nil at once.
	Decide(ctx context.Context) (Decision, error)
	// AbortFor votes abort in site i's name: for a site the coordinator
	// knows will not vote (its session ended before it joined, so no
	// decider ever lists it; the recipes page's coordinator would learn it
	// from its transport or a timeout). A vote already there is fine.
	AbortFor(ctx context.Context, i int) error
	// End removes the transaction's nodes, the sites' included; call it
	// once every site has decided. A node already gone is fine.
	End(ctx context.Context) error
}

// TxSite is site i of a transaction. It is used by one goroutine.
type TxSite interface {
	// Join registers the site (its ephemeral presence node): from now on
	// its session's loss aborts the transaction, for every decider that has
	// listed it. A site whose session ends before any decider listed it is
	// never seen: the deciders then wait for its vote until their ctx ends
	// (the recipes page has no timeout either; a caller bounds ctx).
	Join(ctx context.Context) error
	// Vote writes the site's vote and blocks until it knows the decision,
	// ctx is done (ctx's error) or its session is lost (ErrTxBroken). The
	// decision is Abort if any site voted abort or a joined site's session
	// ended before the decision, and Commit only if all n voted commit.
	Vote(ctx context.Context, commit bool) (Decision, error)
}

// TwoPhase makes the coordinator and the sites of the transaction at path
// among n sites numbered 0..n-1, each on its own session.
type TwoPhase interface {
	Coordinator(s backends.Session, path string, n int) TxCoordinator
	Site(s backends.Session, path string, i, n int) TxSite
}
