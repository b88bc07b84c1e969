package naive

import (
	"context"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// AllWatch is the two-phase commit as the ZooKeeper recipes page first
// describes it, with the page's fix for failure detection (each site makes
// its own ephemeral nodes): the coordinator makes the transaction's nodes
// and nothing else; every site decides for itself.
//
// Algorithm: site i joins with its presence node <tx>/sites/<i>, votes with
// <tx>/votes/<i>-commit or -abort, then loops: ChildrenW on the sites and on
// the votes; abort on an abort vote or on a site or vote it saw that is
// gone (and vote abort in the name of a site it saw go, so that a site that
// listed only after it went aborts too); commit when all n sites and n
// commit votes are in; else sleep until either list changes.
//
// Notifications: every vote (and every join) changes a list that every site
// watches, so each of the n votes notifies up to n sites (a site re-arming
// late folds several into one): O(n²) notifications a transaction, and each
// wake-up lists both lists again, O(n) bytes each, O(n³) bytes a
// transaction. Where every site must hear every vote this is the job done
// expensively, not a herd of losers; the coordinated variant (recipes/fair)
// does the same job with O(n).
type AllWatch struct{}

var _ recipes.TwoPhase = AllWatch{}

// Coordinator implements recipes.TwoPhase.
func (AllWatch) Coordinator(s backends.Session, tx string, n int) recipes.TxCoordinator {
	return &allWatchCoordinator{TxParty: recipe.TxParty{S: s, Tx: tx, Pkg: "naive"}}
}

// Site implements recipes.TwoPhase.
func (AllWatch) Site(s backends.Session, tx string, i, n int) recipes.TxSite {
	return &allWatchSite{TxParty: recipe.TxParty{S: s, Tx: tx, Pkg: "naive"}, i: i, n: n}
}

type allWatchCoordinator struct{ recipe.TxParty }

// Decide returns at once: in this variant every site decides for itself.
func (c *allWatchCoordinator) Decide(context.Context) (recipes.Decision, error) { return "", nil }

type allWatchSite struct {
	recipe.TxParty
	i, n int
}

func (st *allWatchSite) Join(ctx context.Context) error { return st.TxParty.Join(ctx, st.i) }

func (st *allWatchSite) Vote(ctx context.Context, commit bool) (recipes.Decision, error) {
	if err := recipe.TxVote(ctx, st.S, st.Tx, st.i, commit); err != nil {
		return "", st.Fail("vote", err)
	}
	d, err := recipe.TxWatch(ctx, st.S, st.Tx, st.n)
	return d, st.Fail("vote", err)
}
