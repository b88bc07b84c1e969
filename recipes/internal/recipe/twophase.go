package recipe

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// The steps both two-phase commit variants share: the nodes of a
// transaction (recipes.TxSites, TxVotes, TxDecision), the rule that turns
// listings into a decision, and the loop that watches both listings until
// they decide.

// TxBegin makes the transaction's persistent nodes (no-op on etcd).
func TxBegin(ctx context.Context, s backends.Session, tx string) error {
	for _, dir := range []string{recipes.TxSites, recipes.TxVotes} {
		if err := s.EnsurePath(ctx, path.Join(tx, dir)); err != nil {
			return err
		}
	}
	return nil
}

// TxJoin makes site i's presence node.
func TxJoin(ctx context.Context, s backends.Session, tx string, i int) error {
	_, err := s.Create(ctx, path.Join(tx, recipes.TxSites, strconv.Itoa(i)), nil)
	return err
}

// TxVote makes site i's vote node, the vote in its name.
func TxVote(ctx context.Context, s backends.Session, tx string, i int, commit bool) error {
	v := recipes.Abort
	if commit {
		v = recipes.Commit
	}
	_, err := s.Create(ctx, path.Join(tx, recipes.TxVotes, fmt.Sprintf("%d-%s", i, v)), nil)
	return err
}

// TxAbortFor votes abort in site i's name; a vote already there is fine.
func TxAbortFor(ctx context.Context, s backends.Session, tx string, i int) error {
	err := TxVote(ctx, s, tx, i, false)
	if errors.Is(err, backends.ErrNodeExists) {
		return nil
	}
	return err
}

// TxEnd removes every node of the transaction, the sites' ephemeral ones
// included; nodes already gone are fine.
func TxEnd(ctx context.Context, s backends.Session, tx string) error {
	var paths []string
	for _, dir := range []string{recipes.TxSites, recipes.TxVotes} {
		children, err := s.Children(ctx, path.Join(tx, dir))
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			return err
		}
		for _, c := range children {
			paths = append(paths, c.Path)
		}
	}
	paths = append(paths, path.Join(tx, recipes.TxDecision), path.Join(tx, recipes.TxSites), path.Join(tx, recipes.TxVotes), tx)
	for _, p := range paths {
		if err := s.Delete(ctx, p); err != nil && !errors.Is(err, backends.ErrNoNode) {
			return err
		}
	}
	return nil
}

// TxState is what one watcher of a transaction of n sites has seen.
type TxState struct {
	n                int
	seenSites, votes map[string]bool
}

// NewTxState returns the state of a watcher that has seen nothing yet.
func NewTxState(n int) *TxState {
	return &TxState{n: n, seenSites: map[string]bool{}, votes: map[string]bool{}}
}

// Decide folds one pair of listings into the state and returns the
// decision they make, "" while undecided: Abort for an abort vote, or for a
// site or vote seen before and now gone (its session ended; gone names the
// sites whose presence went); Commit once n sites are present and n votes,
// all commit, are in.
func (st *TxState) Decide(sites, votes []backends.Node) (d recipes.Decision, gone []string) {
	present := map[string]bool{}
	for _, c := range sites {
		present[c.Name] = true
	}
	in := map[string]bool{}
	for _, c := range votes {
		in[c.Name] = true
		if strings.HasSuffix(c.Name, "-"+string(recipes.Abort)) {
			d = recipes.Abort
		}
	}
	for name := range st.seenSites {
		if !present[name] {
			gone = append(gone, name)
		}
	}
	for name := range st.votes {
		if !in[name] {
			d = recipes.Abort
		}
	}
	if d != "" || len(gone) > 0 {
		return recipes.Abort, gone
	}
	st.seenSites, st.votes = present, in
	if len(present) >= st.n && len(in) >= st.n {
		return recipes.Commit, nil
	}
	return "", nil
}

// TxWatch lists the transaction's sites and votes with a children watch on
// each until they decide (TxState.Decide): every change to either list
// wakes the watcher, who lists both again. A site seen and then gone gets
// an abort vote from the watcher who saw it go. It returns the decision, ctx's
// error, or backends.ErrSessionLost.
func TxWatch(ctx context.Context, s backends.Session, tx string, n int) (recipes.Decision, error) {
	st := NewTxState(n)
	for {
		d, err := txWatchOnce(ctx, s, tx, st)
		if d != "" || err != nil {
			return d, err
		}
	}
}

func txWatchOnce(ctx context.Context, s backends.Session, tx string, st *TxState) (recipes.Decision, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sites, sitesEv, err := s.ChildrenW(wctx, path.Join(tx, recipes.TxSites))
	if err != nil {
		return "", err
	}
	votes, votesEv, err := s.ChildrenW(wctx, path.Join(tx, recipes.TxVotes))
	if err != nil {
		return "", err
	}
	d, gone := st.Decide(sites, votes)
	// A watcher that saw a site go votes abort in its name, so that the
	// watchers that never saw that site (they listed after it was gone)
	// decide abort too instead of waiting for its vote.
	for _, name := range gone {
		_, err := s.Create(ctx, path.Join(tx, recipes.TxVotes, name+"-"+string(recipes.Abort)), nil)
		if err != nil && !errors.Is(err, backends.ErrNodeExists) {
			return "", err
		}
	}
	if d != "" {
		return d, nil
	}
	_, err = Wait(ctx, s, sitesEv, votesEv)
	return "", err
}

// TxParty is what a coordinator and a site of either variant share: the
// session, the transaction's path, and the calls whose steps do not depend
// on the variant, each error prefixed with the variant's package (pkg) and
// a lost session wrapped as recipes.ErrTxBroken. Variants embed it.
type TxParty struct {
	S   backends.Session
	Tx  string
	Pkg string
}

// Begin implements recipes.TxCoordinator.Begin.
func (p TxParty) Begin(ctx context.Context) error { return p.Fail("begin", TxBegin(ctx, p.S, p.Tx)) }

// AbortFor implements recipes.TxCoordinator.AbortFor.
func (p TxParty) AbortFor(ctx context.Context, i int) error {
	return p.Fail("abort", TxAbortFor(ctx, p.S, p.Tx, i))
}

// End implements recipes.TxCoordinator.End.
func (p TxParty) End(ctx context.Context) error { return p.Fail("end", TxEnd(ctx, p.S, p.Tx)) }

// Join is site i's recipes.TxSite.Join.
func (p TxParty) Join(ctx context.Context, i int) error {
	return p.Fail("join", TxJoin(ctx, p.S, p.Tx, i))
}

// Fail wraps err from op (nil stays nil).
func (p TxParty) Fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s transaction %s: %w", p.Pkg, op, p.Tx, WrapLost(recipes.ErrTxBroken, err))
}
