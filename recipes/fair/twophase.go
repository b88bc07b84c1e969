package fair

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Coordinated is the two-phase commit of the ZooKeeper recipes page with
// both of its fixes: only the coordinator watches the sites and the votes,
// and each site makes its own ephemeral nodes so that a failed site is
// seen.
//
// Algorithm: site i joins with <tx>/sites/<i>, votes with
// <tx>/votes/<i>-commit or -abort, then waits for <tx>/decision (ExistsW;
// once it exists, Get reads the decision). The coordinator loops: ChildrenW
// on the sites and the votes; abort on an abort vote or a site or vote it
// saw that is gone; commit when all n sites and n commit votes are in; it
// writes the decision as the ephemeral <tx>/decision.
//
// Notifications: the coordinator wakes at most once a vote or join (O(n)
// in all, each wake-up listing O(n) bytes), and the decision wakes each
// site once: O(n) notifications a transaction, against all-watch's O(n²).
// On ZooKeeper, which cannot remove a watch, the watches still armed when
// the transaction is removed fire once more, for nobody: the
// coordinator's two lists and each site whose last ExistsW found the
// decision (at most 4n+2 in all).
// Every decision goes through the coordinator, which is one more hop: a
// site decides one notification later than with all-watch. If the
// coordinator's session ends before the decision, the sites wait until
// their ctx ends (the recipes page's coordinator is a single point of
// failure too).
type Coordinated struct{}

var _ recipes.TwoPhase = Coordinated{}

// Coordinator implements recipes.TwoPhase.
func (Coordinated) Coordinator(s backends.Session, tx string, n int) recipes.TxCoordinator {
	return &coordinator{TxParty: recipe.TxParty{S: s, Tx: tx, Pkg: "fair"}, n: n}
}

// Site implements recipes.TwoPhase.
func (Coordinated) Site(s backends.Session, tx string, i, n int) recipes.TxSite {
	return &site{TxParty: recipe.TxParty{S: s, Tx: tx, Pkg: "fair"}, i: i}
}

type coordinator struct {
	recipe.TxParty
	n int
}

func (c *coordinator) Decide(ctx context.Context) (recipes.Decision, error) {
	d, err := recipe.TxWatch(ctx, c.S, c.Tx, c.n)
	if err != nil {
		return "", c.Fail("decide", err)
	}
	if _, err := c.S.Create(ctx, path.Join(c.Tx, recipes.TxDecision), []byte(d)); err != nil {
		return "", c.Fail("decide", err)
	}
	return d, nil
}

type site struct {
	recipe.TxParty
	i int
}

func (st *site) Join(ctx context.Context) error { return st.TxParty.Join(ctx, st.i) }

func (st *site) Vote(ctx context.Context, commit bool) (recipes.Decision, error) {
	if err := recipe.TxVote(ctx, st.S, st.Tx, st.i, commit); err != nil {
		return "", st.Fail("vote", err)
	}
	for {
		d, err := st.decisionOnce(ctx)
		if d != "" || err != nil {
			return d, st.Fail("vote", err)
		}
	}
}

// decisionOnce reads the decision if it is there, else sleeps until its
// node's watch fires ("" and nil: look again).
func (st *site) decisionOnce(ctx context.Context) (recipes.Decision, error) {
	p := path.Join(st.Tx, recipes.TxDecision)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exists, _, events, err := st.S.ExistsW(wctx, p)
	if err != nil {
		return "", err
	}
	if !exists {
		_, err = recipe.Wait(ctx, st.S, events, nil)
		return "", err
	}
	data, _, err := st.S.Get(ctx, p)
	if errors.Is(err, backends.ErrNoNode) {
		return "", nil // gone again (the coordinator's session ended): look again
	}
	if err != nil {
		return "", err
	}
	switch d := recipes.Decision(data); d {
	case recipes.Commit, recipes.Abort:
		return d, nil
	}
	return "", fmt.Errorf("decision %q is neither commit nor abort", data)
}
