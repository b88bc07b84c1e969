package naive

import (
	"context"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Queue is the distributed queue with the herd left in: the queue most
// often written first.
//
// Algorithm: a producer puts an ephemeral sequential node
// <path>/items/q<PPP>-<tag>-<seq> (recipe.ItemProducer: priority in the
// name, so names sort by priority, then put order). A consumer's Take lists
// <path>/items with ChildrenW; if it is empty it sleeps until the children
// change and lists again. Otherwise it races to take the first item (most
// urgent, oldest): it reads it and deletes it; if another consumer deleted
// it first (a failed claim), it lists again at once.
//
// Herd behaviour: every idle consumer watches the items' children, so one
// new item wakes every idle consumer (C notifications for C idle), each of
// which lists the queue (O(items) bytes) and races for the same first item:
// one delete succeeds and the others fail (about C-1 failed claims an item
// when all are idle) and list again, and every such delete is another
// change that wakes whoever is still waiting. With priorities nothing
// changes: every Take lists afresh.
//
// Delivery: at most once. The delete is the take: an item whose consumer
// is lost after Take returned it is gone. Ack makes no request.
//
// <path>/items is made (EnsurePath) on the first Take.
type Queue struct{}

var _ recipes.QueueFactory = Queue{}

// Producer returns recipe.ItemProducer.
func (Queue) Producer(s backends.Session, path string, _ recipes.QueueConfig) (recipes.Producer, error) {
	return recipe.NewItemProducer(s, path), nil
}

// Consumer returns the racing consumer of the queue at path on s. It makes
// no request.
func (Queue) Consumer(s backends.Session, path string, _ recipes.QueueConfig) (recipes.Consumer, error) {
	return &consumer{recipe.NewItemConsumer("naive", s, path)}, nil
}

// consumer is one client's naive consumer.
type consumer struct {
	recipe.ItemConsumer
}

// Take lists the items and races for the first one until it wins one. See
// recipes.Consumer and Queue. Cancelling ctx drops the watch; nothing is
// taken.
func (c *consumer) Take(ctx context.Context) (recipes.Taken, error) {
	if err := c.Unacked(); err != nil {
		return recipes.Taken{}, err
	}
	if recipe.Ended(c.S) {
		return recipes.Taken{}, recipe.QueueLost(nil)
	}
	var wakeups, failed int
	for {
		wctx, cancel := context.WithCancel(ctx)
		kids, events, err := c.ListW(wctx)
		if err != nil {
			cancel()
			return recipes.Taken{}, recipe.QueueLost(err)
		}
		if len(kids) == 0 {
			woke, err := recipe.AwaitChange(ctx, c.S, events)
			cancel()
			if err != nil {
				return recipes.Taken{}, err
			}
			if woke {
				wakeups++
			}
			continue
		}
		cancel()
		recipe.SortItems(kids)
		t, taken, err := c.Claim(ctx, kids[0], wakeups, failed)
		if err != nil || taken {
			return t, err
		}
		failed++
	}
}
