package recipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// Election returns family pkg's ("naive", "fair", "native") election
// recipes: Latches campaigning with the Candidate newCandidate makes for
// each, Selectors of one such Latch per term, and newObserver's observers.
func Election[O recipes.Observer](pkg string, newCandidate func(id string) Candidate,
	newObserver func(s backends.Session, path string, opts ...recipes.Option) O, opts ...recipes.Option) recipes.Election {
	timeout := recipes.NewOptions(opts...).CleanupTimeout
	newLatch := func(s backends.Session, path, id string) recipes.Latch {
		return &Latch{S: s, Path: path, Timeout: timeout, pkg: pkg, cand: newCandidate(id)}
	}
	return recipes.Election{
		Latch: newLatch,
		Selector: func(s backends.Session, path, id string) recipes.Selector {
			return NewSelector(func() recipes.Latch { return newLatch(s, path, id) }, timeout)
		},
		Observer: func(s backends.Session, path string) recipes.Observer {
			return newObserver(s, path, opts...)
		},
	}
}

// Selector is recipes.Selector built on latches, the way Curator builds
// LeaderSelector on a mutex: each term is one fresh Latch, awaited, held for
// the callback, and closed. Requeueing is volunteering again with a new
// latch; whether that is round-robin depends on the latch (a queue of
// sequential nodes puts the requeued candidate last; a create race does not).
type Selector struct {
	newLatch func() recipes.Latch
	timeout  time.Duration
}

var _ recipes.Selector = (*Selector)(nil)

// NewSelector returns a Selector that makes one latch per term with
// newLatch and closes each on a fresh context bounded by cleanupTimeout.
func NewSelector(newLatch func() recipes.Latch, cleanupTimeout time.Duration) *Selector {
	return &Selector{newLatch: newLatch, timeout: cleanupTimeout}
}

// Run implements recipes.Selector.
func (sel *Selector) Run(ctx context.Context, takeLeadership func(ctx context.Context) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := sel.newLatch()
		lead, err := l.Await(ctx)
		if err != nil {
			sel.close(ctx, l)
			return err
		}
		lost, ferr := sel.term(ctx, lead, takeLeadership)
		cerr := sel.close(ctx, l)
		switch {
		case lost && (ferr == nil || (errors.Is(ferr, context.Canceled) && ctx.Err() == nil)):
			// The callback stopped because the term was lost, not by choice.
			return LostAs(recipes.ErrLeadershipLost)
		case ferr != nil:
			return ferr
		case cerr != nil && !errors.Is(cerr, backends.ErrSessionLost):
			return fmt.Errorf("selector: give up leadership: %w", cerr)
		}
	}
}

// term runs takeLeadership with a context that ends with the term, and
// reports whether the term was lost (session ended) before it returned.
func (sel *Selector) term(ctx context.Context, lead recipes.Leadership,
	takeLeadership func(ctx context.Context) error) (lost bool, err error) {
	tctx, cancel := context.WithCancel(ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-lead.Lost:
			cancel()
		case <-stop:
		}
	}()
	err = takeLeadership(tctx)
	close(stop)
	cancel()
	return Closed(lead.Lost), err
}

func (sel *Selector) close(ctx context.Context, l recipes.Latch) error {
	cctx, cancel := Fresh(ctx, sel.timeout)
	defer cancel()
	return l.Close(cctx)
}

// Latch is recipes.Latch for every family: the answer of an Await that
// need not campaign (a closed latch, a lost term, a term already held), the
// term it starts once its candidate's campaign won, the end of the term on
// Close, and errors prefixed with the family's name. How a candidate
// campaigns and gives up its place is its variant's Candidate. A Latch is
// used by one goroutine on one session.
type Latch struct {
	S       backends.Session
	Path    string
	Timeout time.Duration // bounds every cleanup's fresh context
	pkg     string
	cand    Candidate
	term    *Term
	lead    recipes.Leadership
	ended   bool
}

var _ recipes.Latch = (*Latch)(nil)

// Candidate is an election variant's own part of a Latch.
type Candidate interface {
	// Campaign waits until the candidate leads and returns its term's
	// token and the wake-ups it took. Its errors are returned as they
	// are: wrap them with l.Fail.
	Campaign(ctx context.Context, l *Latch) (token int64, wakeups int, err error)
	// Withdraw gives the candidate's place up once Close ended the latch;
	// led says whether a term had begun. Wrap its errors with
	// l.CloseFailed.
	Withdraw(ctx context.Context, l *Latch, led bool) error
}

// Await implements recipes.Latch: on a closed latch it fails with
// recipes.ErrClosed, on a lost term with recipes.ErrLeadershipLost; during
// a term it returns the term; otherwise its candidate campaigns, and a
// term starts that ends with the session. What cancelling ctx does is the
// candidate's (Candidate.Campaign).
func (l *Latch) Await(ctx context.Context) (recipes.Leadership, error) {
	switch {
	case l.ended:
		return recipes.Leadership{}, l.Fail(recipes.ErrClosed)
	case l.term != nil && Closed(l.term.Lost()):
		return recipes.Leadership{}, l.Fail(LostAs(recipes.ErrLeadershipLost))
	case l.term != nil:
		return l.lead, nil
	}
	token, wakeups, err := l.cand.Campaign(ctx, l)
	if err != nil {
		return recipes.Leadership{}, err
	}
	l.term = NewTerm(l.S.Done())
	l.lead = recipes.Leadership{Token: token, Wakeups: wakeups, Lost: l.term.Lost()}
	return l.lead, nil
}

// Close implements recipes.Latch: on the first call it ends the term, then
// its candidate withdraws (Candidate.Withdraw); later calls do nothing.
func (l *Latch) Close(ctx context.Context) error {
	if l.ended {
		return nil
	}
	l.ended = true
	if l.term != nil {
		l.term.End()
	}
	return l.cand.Withdraw(ctx, l, l.term != nil)
}

// Token is the current term's token (0 before the first).
func (l *Latch) Token() int64 { return l.lead.Token }

// Fail wraps an Await error; a lost session also matches
// recipes.ErrLeadershipLost.
func (l *Latch) Fail(err error) error {
	return fmt.Errorf("%s: await leadership %s: %w", l.pkg, l.Path, WrapLost(recipes.ErrLeadershipLost, err))
}

// CloseFailed wraps a Close error.
func (l *Latch) CloseFailed(err error) error {
	return fmt.Errorf("%s: close latch %s: %w", l.pkg, l.Path, err)
}

// ElectedToken is the token of the candidate node n once its candidate
// leads: n's create revision, or backends.ErrSessionLost if the session
// died meanwhile.
func ElectedToken(ctx context.Context, s backends.Session, n backends.Node) (int64, error) {
	token, err := CreateRev(ctx, s, n)
	if err == nil && Closed(s.Done()) {
		err = backends.ErrSessionLost
	}
	return token, err
}

// ReadLeader returns the leader that the candidate node at path names (its
// data, its create revision), if the node still exists.
func ReadLeader(ctx context.Context, s backends.Session, path string) (recipes.LeaderInfo, bool, error) {
	data, n, err := s.Get(ctx, path)
	switch {
	case errors.Is(err, backends.ErrNoNode):
		return recipes.LeaderInfo{}, false, nil
	case err != nil:
		return recipes.LeaderInfo{}, false, err
	}
	return recipes.LeaderInfo{ID: string(data), Token: n.CreateRev}, true, nil
}
