package recipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// NewLatchFunc is the shape of every family's NewLatch.
type NewLatchFunc[L recipes.Latch] func(s backends.Session, path, id string, opts ...recipes.Option) L

// Election returns a family's election recipes from its constructors.
func Election[L recipes.Latch, O recipes.Observer](newLatch NewLatchFunc[L],
	newSelector func(s backends.Session, path, id string, opts ...recipes.Option) recipes.Selector,
	newObserver func(s backends.Session, path string, opts ...recipes.Option) O, opts ...recipes.Option) recipes.Election {
	return recipes.Election{
		Latch: func(s backends.Session, path, id string) recipes.Latch {
			return newLatch(s, path, id, opts...)
		},
		Selector: func(s backends.Session, path, id string) recipes.Selector {
			return newSelector(s, path, id, opts...)
		},
		Observer: func(s backends.Session, path string) recipes.Observer {
			return newObserver(s, path, opts...)
		},
	}
}

// SelectorOf returns candidate id's selector for the election at path: one
// latch from newLatch per term (see Selector).
func SelectorOf[L recipes.Latch](newLatch NewLatchFunc[L], s backends.Session, path, id string, opts ...recipes.Option) recipes.Selector {
	o := recipes.NewOptions(opts...)
	return NewSelector(func() recipes.Latch { return newLatch(s, path, id, opts...) }, o.CleanupTimeout)
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

// Candidacy is what every election latch shares: the answer of an Await
// that need not campaign (a closed latch, a lost term, a term already
// held), the term it starts once its variant's campaign won, the end of the
// term on Close, and errors prefixed with the family's name. How a
// candidate campaigns and gives up its place is its variant's.
type Candidacy struct {
	S       backends.Session
	Path    string
	Timeout time.Duration // bounds every cleanup's fresh context
	pkg     string
	term    *Term
	lead    recipes.Leadership
	ended   bool
}

// NewCandidacy returns the candidacy of family pkg ("naive", "fair",
// "native") in the election at path. It makes no request.
func NewCandidacy(pkg string, s backends.Session, path string, timeout time.Duration) Candidacy {
	return Candidacy{S: s, Path: path, Timeout: timeout, pkg: pkg}
}

// Campaign waits until the candidate leads and returns its term's token and
// the wake-ups it took. Its errors are returned as they are: wrap them with
// Fail.
type Campaign func(ctx context.Context) (token int64, wakeups int, err error)

// Await implements recipes.Latch's Await around campaign: on a closed
// latch it fails with recipes.ErrClosed, on a lost term with
// recipes.ErrLeadershipLost; during a term it returns the term; otherwise
// it runs campaign and starts a term that ends with the session.
func (c *Candidacy) Await(ctx context.Context, campaign Campaign) (recipes.Leadership, error) {
	switch {
	case c.ended:
		return recipes.Leadership{}, c.Fail(recipes.ErrClosed)
	case c.term != nil && Closed(c.term.Lost()):
		return recipes.Leadership{}, c.Fail(LostAs(recipes.ErrLeadershipLost))
	case c.term != nil:
		return c.lead, nil
	}
	token, wakeups, err := campaign(ctx)
	if err != nil {
		return recipes.Leadership{}, err
	}
	c.term = NewTerm(c.S.Done())
	c.lead = recipes.Leadership{Token: token, Wakeups: wakeups, Lost: c.term.Lost()}
	return c.lead, nil
}

// End closes the latch and ends its term. It reports whether the latch was
// open (a second Close has nothing to do) and whether a term had begun.
func (c *Candidacy) End() (open, led bool) {
	if c.ended {
		return false, c.term != nil
	}
	c.ended = true
	if c.term != nil {
		c.term.End()
	}
	return true, c.term != nil
}

// Token is the current term's token (0 before the first).
func (c *Candidacy) Token() int64 { return c.lead.Token }

// Fail wraps an Await error; a lost session also matches
// recipes.ErrLeadershipLost.
func (c *Candidacy) Fail(err error) error {
	return fmt.Errorf("%s: await leadership %s: %w", c.pkg, c.Path, WrapLost(recipes.ErrLeadershipLost, err))
}

// CloseFailed wraps a Close error.
func (c *Candidacy) CloseFailed(err error) error {
	return fmt.Errorf("%s: close latch %s: %w", c.pkg, c.Path, err)
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
