package naive

import (
	"context"
	"fmt"

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
	return &allWatchCoordinator{s: s, tx: tx}
}

// Site implements recipes.TwoPhase.
func (AllWatch) Site(s backends.Session, tx string, i, n int) recipes.TxSite {
	return &allWatchSite{s: s, tx: tx, i: i, n: n}
}

type allWatchCoordinator struct {
	s  backends.Session
	tx string
}

func (c *allWatchCoordinator) Begin(ctx context.Context) error {
	return txFail("begin", c.tx, recipe.TxBegin(ctx, c.s, c.tx))
}

// Decide returns at once: in this variant every site decides for itself.
func (c *allWatchCoordinator) Decide(context.Context) (recipes.Decision, error) { return "", nil }

func (c *allWatchCoordinator) AbortFor(ctx context.Context, i int) error {
	return txFail("abort", c.tx, recipe.TxAbortFor(ctx, c.s, c.tx, i))
}

func (c *allWatchCoordinator) End(ctx context.Context) error {
	return txFail("end", c.tx, recipe.TxEnd(ctx, c.s, c.tx))
}

type allWatchSite struct {
	s    backends.Session
	tx   string
	i, n int
}

func (st *allWatchSite) Join(ctx context.Context) error {
	return txFail("join", st.tx, recipe.TxJoin(ctx, st.s, st.tx, st.i))
}

func (st *allWatchSite) Vote(ctx context.Context, commit bool) (recipes.Decision, error) {
	if err := recipe.TxVote(ctx, st.s, st.tx, st.i, commit); err != nil {
		return "", txFail("vote", st.tx, err)
	}
	d, err := recipe.TxWatch(ctx, st.s, st.tx, st.n)
	return d, txFail("vote", st.tx, err)
}

func txFail(op, tx string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("naive: %s transaction %s: %w", op, tx, recipe.WrapLost(recipes.ErrTxBroken, err))
}
