package recipes

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
)

// Errors of the queue recipes, checked with errors.Is.
var (
	// ErrQueueLost: the consumer's session ended; an item it had taken
	// but not acknowledged is redelivered (at least once) or gone (at most
	// once). Errors wrapping it also wrap backends.ErrSessionLost.
	ErrQueueLost = errors.New("recipes: queue session lost")
	// ErrNotTaken: Ack of a delivery this consumer does not hold.
	ErrNotTaken = errors.New("recipes: item not taken")
)

// Delivery is what a queue promises about an item whose consumer's session
// ends after Take returned it and before Ack.
type Delivery string

// Deliveries.
const (
	// AtMostOnce: Take removes the item from the queue; an item whose
	// consumer is lost before it finished with it is gone.
	AtMostOnce Delivery = "at-most-once"
	// AtLeastOnce: Take claims the item (an ephemeral claim node) and Ack
	// removes it; an item whose consumer is lost before Ack is taken again
	// by another consumer.
	AtLeastOnce Delivery = "at-least-once"
)

// The layout of a queue under its path, shared by every variant: items/
// holds the items, claims/ the at-least-once claims (recipes/fair), idle/
// the herd-free variant's line of idle consumers.
const (
	QueueItemsDir  = "items"
	QueueClaimsDir = "claims"
	QueueIdleDir   = "idle"
)

// MaxPriority is the largest priority a queue item may carry. Priorities
// run from 0 (most urgent, served first) to MaxPriority, as UNIX nice
// values and the ZooKeeper recipes page's "queue-YY".
const MaxPriority = 999

// Taken is one item a consumer took.
type Taken struct {
	// Data is the item as its producer put it.
	Data []byte
	// Priority is the item's priority (0 without priorities).
	Priority int
	// Name is the item's node name in the queue (its sequence order and
	// priority), for diagnostics.
	Name string
	// Wakeups counts the watch notifications this Take consumed.
	Wakeups int
	// FailedClaims counts the items this Take tried to take and found
	// taken by another consumer first.
	FailedClaims int
	// Uncertain is set on the item a Take returns together with an error
	// (ErrQueueLost, or backends.ErrUnknownOutcome) when the session was
	// lost, or the connection, while the take's delete was in flight: it
	// may or may not have landed, so the item may be gone (at most once:
	// dropped) or still queued for another consumer.
	Uncertain bool
}

// Producer puts items into one queue on one session. A Producer is used
// by one goroutine.
type Producer interface {
	// Put adds data with priority (0 to MaxPriority; 0 is served first) to
	// the queue. Items live as long as their producer's session (the
	// ZooKeeper recipes page's ephemeral sequential nodes), except where a
	// variant's doc says otherwise. Put blocks until the server answered
	// or ctx is done; an error matching backends.ErrUnknownOutcome may
	// have added the item.
	Put(ctx context.Context, data []byte, priority int) error
}

// Consumer takes items from one queue on one session. A Consumer is used
// by one goroutine: Take, then Ack, then Take again.
type Consumer interface {
	// Take blocks until it has taken an item, ctx is done (ctx's error:
	// nothing is taken, and whatever the wait made is removed on a fresh
	// bounded context) or the session is lost (ErrQueueLost; with the item
	// and Taken.Uncertain when the take's write was in flight). Without
	// priorities items come in put order; with them, most urgent first.
	Take(ctx context.Context) (Taken, error)
	// Ack says the consumer is done with the item Take returned last. An
	// at-least-once variant removes the item (and its claim) only now; an
	// at-most-once one has already and makes no request. ErrQueueLost if
	// the session ended first (the item is then redelivered or gone, as
	// Delivery says); ErrNotTaken without a Take.
	Ack(ctx context.Context) error
}

// QueueConfig is what every producer and consumer of one queue is given.
type QueueConfig struct {
	// Priorities is the number of priority levels items use (0 and 1:
	// none). With more than one, consumers drop any list of items they
	// hold once they are notified that the queue changed (the recipes
	// page's priority queue), so that an item put later but more urgent is
	// served first by every Take that starts after that notification
	// arrived (see fair.BatchQueue).
	Priorities int
}

// QueueFactory makes one client's producer and consumer of the queue at
// path on session s. Every client of one queue is given the same path and
// config.
type QueueFactory interface {
	Producer(s backends.Session, path string, cfg QueueConfig) (Producer, error)
	Consumer(s backends.Session, path string, cfg QueueConfig) (Consumer, error)
}

// Strander is an optional ability of a Consumer whose library call cannot
// be cancelled (recipes/native): a Take that returned on ctx's end or a
// lost session left that call running, and it may take an item after the
// consumer's last Take. Stranded returns such an item once the session is
// closed (waiting up to ctx), so that the item is accounted for.
type Strander interface {
	Stranded(ctx context.Context) (data []byte, ok bool)
}
