package fair

import (
	"context"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// BatchQueue is the ZooKeeper recipes page's queue, as written there.
//
// Algorithm: a producer puts an ephemeral sequential node
// <path>/items/q<PPP>-<tag>-<seq> (recipe.ItemProducer: the priority in the
// name, so names sort by priority, then put order). A consumer lists
// <path>/items with ChildrenW and works through the list it got, first item
// first, before it lists again: each Take reads and deletes the next item
// of its list (another consumer's delete first is a failed claim, and it
// moves on to the next). Only an exhausted list, or an empty queue (then
// it sleeps until the watch fires), makes it list again. With priorities
// (QueueConfig.Priorities > 1) it also drops its list as soon as that
// list's watch fired, the page's priority queue: a more urgent item put
// since the listing is then served first.
//
// What it promises about an item put while a consumer holds a list: the
// item is served before the list's less urgent items by every Take that
// starts after the list's watch notification reached the consumer. A Take
// that starts while the notification is still on its way takes the next
// item of the old list. On ZooKeeper a session receives a notification
// before the replies the server sends after it, so an item put on the
// consumer's own session always counts; etcd sends watch events on a stream
// of their own, which may trail the put's reply on the same client.
//
// Herd behaviour: every idle consumer watches the items' children, so one
// new item still wakes every idle consumer (C notifications for C idle),
// and every consumer that listed the same queue works down the same list:
// busy consumers list far less often than the naive queue's, but they race
// for the same items in the same order, and all but one of each race fail
// (failed claims grow with the consumers holding the same list). With
// priorities every change to the queue (each put, each take) makes every
// consumer holding a list drop it and list again.
//
// Delivery: at most once. The delete is the take.
type BatchQueue struct{}

var _ recipes.QueueFactory = BatchQueue{}

// Producer returns recipe.ItemProducer.
func (BatchQueue) Producer(s backends.Session, path string, _ recipes.QueueConfig) (recipes.Producer, error) {
	return recipe.NewItemProducer(s, path), nil
}

// Consumer returns the batch consumer of the queue at path on s. It makes
// no request.
func (BatchQueue) Consumer(s backends.Session, path string, cfg recipes.QueueConfig) (recipes.Consumer, error) {
	return &batchConsumer{ItemConsumer: recipe.NewItemConsumer("fair", s, path), priorities: cfg.Priorities > 1}, nil
}

// batchConsumer is one client's consumer of a BatchQueue.
type batchConsumer struct {
	recipe.ItemConsumer
	priorities bool

	batch   []backends.Node
	changed <-chan backends.Event // the batch's listing watch
	stop    context.CancelFunc    // ends that watch
}

// Take takes the next item of the consumer's list, listing again when the
// list is exhausted (or, with priorities, stale). Cancelling ctx keeps the
// list for the next Take and takes nothing.
func (c *batchConsumer) Take(ctx context.Context) (recipes.Taken, error) {
	if err := c.Unacked(); err != nil {
		return recipes.Taken{}, err
	}
	if recipe.Ended(c.S) {
		c.drop()
		return recipes.Taken{}, recipe.QueueLost(nil)
	}
	var wakeups, failed int
	for {
		if c.priorities && c.fired() {
			wakeups++
			c.drop()
		}
		if len(c.batch) == 0 {
			woke, err := c.relist(ctx)
			if woke {
				wakeups++
			}
			if err != nil {
				return recipes.Taken{}, err
			}
			continue
		}
		n := c.batch[0]
		c.batch = c.batch[1:]
		t, taken, err := c.Claim(ctx, n, wakeups, failed)
		if err != nil || taken {
			return t, err
		}
		failed++
	}
}

// relist lists the queue with a watch into a new batch; if it is empty, it
// sleeps until the watch fires (woke) and leaves the batch empty.
func (c *batchConsumer) relist(ctx context.Context) (woke bool, err error) {
	if c.fired() {
		woke = true
	}
	c.drop()
	// The watch outlives this Take (it marks the list stale), so it is
	// armed on a context of its own; ctx still bounds the call itself.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	bound := context.AfterFunc(ctx, cancel)
	kids, changed, err := c.ListW(wctx)
	c.changed = changed
	if !bound() && err == nil {
		err = ctx.Err() // ctx ended during the call: the watch went with it
	}
	c.stop = cancel
	if err != nil {
		c.drop()
		return woke, recipe.QueueLost(err)
	}
	if len(kids) > 0 {
		recipe.SortItems(kids)
		c.batch = kids
		return woke, nil
	}
	w, err := recipe.AwaitChange(ctx, c.S, c.changed)
	if w {
		woke = true
		c.changed = nil
	}
	c.drop()
	return woke, err
}

// fired reports (and consumes) a notification of the batch's watch.
func (c *batchConsumer) fired() bool {
	if c.changed == nil {
		return false
	}
	select {
	case ev, ok := <-c.changed:
		c.changed = nil
		return ok && ev.Type != backends.EventSessionLost
	default:
		return false
	}
}

// drop forgets the batch and ends its watch.
func (c *batchConsumer) drop() {
	c.batch, c.changed = nil, nil
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}
