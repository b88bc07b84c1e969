package fair

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Queue is the herd-free distributed queue: idle consumers queue like lock
// waiters. None of Curator's (DistributedQueue, DistributedPriorityQueue),
// kazoo's (Queue, LockingQueue) or etcd's (experimental recipe Queue,
// PriorityQueue) queues has this: in each, every idle consumer watches the
// queue (or its prefix), so one new item wakes them all.
//
// Algorithm: a producer puts an ephemeral sequential node
// <path>/items/q<PPP>-<tag>-<seq> (recipe.ItemProducer). A consumer's Take
// first joins the line of idle consumers, <path>/idle, which is this
// package's fair Lock: each idle consumer watches only its predecessor in
// the line. The head of the line (the lock's holder) is the one consumer
// that watches the items: it lists <path>/claims, then <path>/items with
// ChildrenW, and claims the first item (most urgent, oldest) that has no
// claim by creating the ephemeral node <path>/claims/<item name>, then
// reads the item (an item already gone, acknowledged by an earlier
// claimant, is given up and the claim removed). If every item is claimed
// or there is none, it sleeps on the items' watch. Once it holds a claim it
// leaves the line (the lock's Release), which wakes its successor, the new
// head. Ack deletes the item, then the claim.
//
// Herd behaviour: one new item wakes one consumer, the head of the idle
// line, and its taking wakes one more, its successor, which becomes the
// head: two notifications an item however many consumers are idle, and no
// failed claims (only the head claims). A consumer that joins or leaves
// the line wakes at most its successor. The price: takes are serialised by
// the line (a handoff and four requests each: claims listing, items
// listing, claim create, item read), and each take lists the items and the
// claims in flight (O(items + consumers) bytes). With priorities nothing
// changes: the head lists afresh at every take.
//
// Delivery: at least once. The item stays in the queue until Ack; a
// consumer lost after Take and before Ack loses its ephemeral claim with
// its session, and the item is taken again by the next head. A consumer
// lost after Ack deleted the item but before the claim went loses only
// the claim.
//
// Leftovers: a claim whose removal failed (no quorum, say: after an Ack
// whose deletes failed, or a claim create of unknown outcome) holds its
// item back from every other consumer while the session lives; the
// consumer's next Take removes it first. An Ack whose item delete failed
// removes the claim, so the item is taken again. The idle line is the fair
// Lock, with that Lock's own leftover handling.
//
// <path>/items and <path>/claims are made (EnsurePath) on first use.
type Queue struct {
	opts []recipes.Option
}

var _ recipes.QueueFactory = Queue{}

// NewQueue returns the herd-free queue; recipes.WithCleanupTimeout bounds
// the fresh context on which a cancelled Take leaves the line or removes a
// claim (default 5s).
func NewQueue(opts ...recipes.Option) Queue { return Queue{opts: opts} }

// Producer returns recipe.ItemProducer.
func (Queue) Producer(s backends.Session, path string, _ recipes.QueueConfig) (recipes.Producer, error) {
	return recipe.NewItemProducer(s, path), nil
}

// Consumer returns one client's consumer of the queue at path on s. It
// makes no request.
func (q Queue) Consumer(s backends.Session, path string, _ recipes.QueueConfig) (recipes.Consumer, error) {
	items, claims := path+"/"+recipe.ItemsDir, path+"/"+recipe.ClaimsDir
	return &idleConsumer{
		s: s, items: items, claims: claims,
		line:    New(s, path+"/"+recipe.IdleDir, q.opts...),
		parent:  recipe.NewParent(s, items),
		cparent: recipe.NewParent(s, claims),
		timeout: recipes.NewOptions(q.opts...).CleanupTimeout,
	}, nil
}

// idleConsumer is one client's consumer of a Queue.
type idleConsumer struct {
	s               backends.Session
	items, claims   string
	line            *Lock
	parent, cparent *recipe.Parent
	timeout         time.Duration

	held        bool
	item, claim string
	// strays are claims of this consumer a failed removal left behind
	// (no quorum, say): each holds its item back from every other consumer
	// while the session lives, so the next Take removes them first.
	strays []string
}

// Take waits at the head of the idle line for an unclaimed item and claims
// it. Cancelling ctx leaves the line (the lock's cleanup) and takes
// nothing.
func (c *idleConsumer) Take(ctx context.Context) (recipes.Taken, error) {
	if c.held {
		return recipes.Taken{}, fmt.Errorf("fair: take: the last item was not acknowledged")
	}
	if err := c.removeStrays(ctx); err != nil {
		return recipes.Taken{}, err
	}
	g, err := c.line.Acquire(ctx)
	if err != nil {
		return recipes.Taken{}, recipe.QueueLost(err)
	}
	t, err := c.claimFirst(ctx)
	t.Wakeups += g.Wakeups
	rerr := c.line.Release(ctx) // wakes the next idle consumer
	if err != nil {
		return t, err
	}
	if rerr != nil && recipe.IsLost(rerr) {
		return t, recipe.QueueLost(rerr)
	}
	return t, nil
}

// claimFirst is the head's loop: list, claim the first unclaimed item, or
// sleep on the items' watch.
func (c *idleConsumer) claimFirst(ctx context.Context) (recipes.Taken, error) {
	var t recipes.Taken
	for {
		claimed, err := c.claimed(ctx)
		if err != nil {
			return t, err
		}
		wctx, cancel := context.WithCancel(ctx)
		var kids []backends.Node
		var events <-chan backends.Event
		_, err = c.parent.Create(wctx, func(ctx context.Context) (backends.Node, error) {
			var err error
			kids, events, err = c.s.ChildrenW(ctx, c.items)
			return backends.Node{}, err
		})
		if err != nil {
			cancel()
			return t, recipe.QueueLost(err)
		}
		recipe.SortItems(kids)
		kids = slices.DeleteFunc(kids, func(n backends.Node) bool { return slices.Contains(claimed, n.Name) })
		if len(kids) == 0 {
			woke, err := recipe.AwaitChange(ctx, c.s, events)
			cancel()
			if woke {
				t.Wakeups++
			}
			if err != nil {
				return t, err
			}
			continue
		}
		cancel()
		for _, n := range kids {
			data, ok, err := c.claimItem(ctx, n)
			if err != nil {
				return t, err
			}
			if ok {
				wakeups, failed := t.Wakeups, t.FailedClaims
				t = recipe.Taken(n, data, wakeups, failed)
				return t, nil
			}
			t.FailedClaims++
		}
	}
}

// claimed lists the names of the items claimed now.
func (c *idleConsumer) claimed(ctx context.Context) ([]string, error) {
	var kids []backends.Node
	_, err := c.cparent.Create(ctx, func(ctx context.Context) (backends.Node, error) {
		var err error
		kids, err = c.s.Children(ctx, c.claims)
		return backends.Node{}, err
	})
	if err != nil {
		return nil, recipe.QueueLost(err)
	}
	names := make([]string, len(kids))
	for i, k := range kids {
		names[i] = k.Name
	}
	return names, nil
}

// claimItem creates n's claim and reads n; ok is false if n was claimed
// first or is gone (its claim is then removed again).
func (c *idleConsumer) claimItem(ctx context.Context, n backends.Node) (data []byte, ok bool, err error) {
	claim := c.claims + "/" + n.Name
	if _, err := c.s.Create(ctx, claim, nil); errors.Is(err, backends.ErrNodeExists) {
		return nil, false, nil
	} else if err != nil {
		if !recipe.IsLost(err) && recipe.Remove(ctx, c.s, claim, c.timeout) != nil {
			c.strays = append(c.strays, claim) // an unknown outcome may have made it
		}
		return nil, false, recipe.QueueLost(err)
	}
	data, _, err = c.s.Get(ctx, n.Path)
	if err != nil {
		rerr := recipe.Remove(ctx, c.s, claim, c.timeout)
		if rerr != nil {
			c.strays = append(c.strays, claim)
		}
		if errors.Is(err, backends.ErrNoNode) && rerr == nil {
			return nil, false, nil // acknowledged by its last claimant
		}
		return nil, false, recipe.QueueLost(errors.Join(err, rerr))
	}
	c.held, c.item, c.claim = true, n.Path, claim
	return data, true, nil
}

// Ack deletes the item, then its claim. If the session is lost first, the
// claim goes with it and the item is taken again (ErrQueueLost). If ctx
// ends first, the deletes are retried on a fresh bounded context. If the
// item's delete fails otherwise, Ack removes the claim, so that the item
// is taken again (at least once), and returns the error; a claim it cannot
// remove is removed by the next Take.
func (c *idleConsumer) Ack(ctx context.Context) error {
	if !c.held {
		return fmt.Errorf("fair: ack: %w", recipes.ErrNotTaken)
	}
	c.held = false
	if recipe.Ended(c.s) {
		return recipe.QueueLost(nil)
	}
	err := recipe.ReleaseWith(ctx, c.s, c.timeout, func(ctx context.Context) error { return c.s.Delete(ctx, c.item) })
	if err != nil && recipe.Ended(c.s) {
		return fmt.Errorf("fair: ack %s: %w", c.item, recipe.QueueLost(err))
	}
	if rerr := recipe.Remove(ctx, c.s, c.claim, c.timeout); rerr != nil {
		c.strays = append(c.strays, c.claim)
		if err == nil {
			return fmt.Errorf("fair: ack: removing claim %s (left to the next Take): %w", c.claim, rerr)
		}
	}
	if err != nil {
		return fmt.Errorf("fair: ack %s: the item stays queued for another take: %w", c.item, err)
	}
	return nil
}

// removeStrays removes the claims a failed removal left behind.
func (c *idleConsumer) removeStrays(ctx context.Context) error {
	for len(c.strays) > 0 {
		if err := recipe.Remove(ctx, c.s, c.strays[0], c.timeout); err != nil {
			return fmt.Errorf("fair: take: removing claim %s left by a failed call: %w", c.strays[0], err)
		}
		c.strays = c.strays[1:]
	}
	return nil
}
