package recipe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// The queue recipes' layout under a queue's path (recipes.QueueItemsDir...).
const (
	ItemsDir  = recipes.QueueItemsDir
	ClaimsDir = recipes.QueueClaimsDir
	IdleDir   = recipes.QueueIdleDir
)

// ItemPrefix is the name prefix of an item of priority p: "q" and three
// digits, so that names sort by priority before their sequence (the
// recipes page's "queue-YY").
func ItemPrefix(p int) string { return fmt.Sprintf("q%03d-", p) }

// ItemPriority reads the priority an item's name carries (0 for a name
// that carries none).
func ItemPriority(name string) int {
	if len(name) < 5 || name[0] != 'q' || name[4] != '-' {
		return 0
	}
	p, err := strconv.Atoi(name[1:4])
	if err != nil {
		return 0
	}
	return p
}

// SortItems orders items as consumers serve them: most urgent priority
// first, then in put order (Seq).
func SortItems(items []backends.Node) {
	slices.SortFunc(items, func(a, b backends.Node) int {
		return cmp.Or(cmp.Compare(ItemPriority(a.Name), ItemPriority(b.Name)), cmp.Compare(a.Seq, b.Seq))
	})
}

// QueueLost reports the end of the session as a queue error (matching
// recipes.ErrQueueLost and backends.ErrSessionLost); other errors are
// returned as they are.
func QueueLost(err error) error {
	if err == nil {
		return LostAs(recipes.ErrQueueLost)
	}
	if IsLost(err) && !errors.Is(err, recipes.ErrQueueLost) {
		return fmt.Errorf("%w: %w", recipes.ErrQueueLost, err)
	}
	return err
}

// ItemProducer is the producer of the naive and fair queues: Put makes an
// ephemeral sequential node <path>/items/q<PPP>-<tag>-<seq> holding the
// item. A lost reply never makes a duplicate item: the create is
// protected (CreateSequential) and not sent again (backends.NoResend),
// since a consumer may have taken the item before the producer looks for
// it; a Put whose item is not found returns ErrUnknownOutcome (the item
// may have been put). Items live as long as the producer's session, as on
// the recipes page. One create per item; <path>/items is made on the first Put.
type ItemProducer struct {
	s      backends.Session
	parent *Parent
	items  string
}

var _ recipes.Producer = (*ItemProducer)(nil)

// NewItemProducer returns the producer of the queue at path on s. It makes
// no request.
func NewItemProducer(s backends.Session, path string) *ItemProducer {
	items := path + "/" + ItemsDir
	return &ItemProducer{s: s, parent: NewParent(s, items), items: items}
}

// Put adds data with priority p. See recipes.Producer.
func (p *ItemProducer) Put(ctx context.Context, data []byte, priority int) error {
	if priority < 0 || priority > recipes.MaxPriority {
		return fmt.Errorf("recipe: put: priority %d outside 0..%d", priority, recipes.MaxPriority)
	}
	_, err := p.parent.Create(ctx, func(ctx context.Context) (backends.Node, error) {
		// Not sent again after a lost reply: a consumer may have taken
		// the item before the producer looks for it.
		return p.s.CreateSequential(backends.NoResend(ctx), p.items, ItemPrefix(priority), data)
	})
	if err != nil {
		return QueueLost(err)
	}
	return nil
}

// Taken builds the recipes.Taken of an item node and its data.
func Taken(n backends.Node, data []byte, wakeups, failed int) recipes.Taken {
	return recipes.Taken{Data: data, Priority: ItemPriority(n.Name), Name: n.Name, Wakeups: wakeups, FailedClaims: failed}
}

// TakeByDelete reads item n's data and deletes it: the take of an
// at-most-once queue (two requests; kazoo's Queue does the same). taken is
// false, with a nil error, when another consumer removed it first (a
// failed claim). If the session is lost, or the delete's outcome is
// unknown, once the read succeeded, data is returned with the error: the
// delete may have landed (recipes.Taken.Uncertain), and returning the item
// as taken could deliver it twice, so at most once it is given up. Once the read succeeded, the delete runs on a fresh
// context bounded by recipes.DefaultCleanupTimeout: a delete cut off by
// ctx could have taken the item without anyone holding it.
func TakeByDelete(ctx context.Context, s backends.Session, n backends.Node) (data []byte, taken bool, err error) {
	data, _, err = s.Get(ctx, n.Path)
	if err == nil {
		fctx, cancel := Fresh(ctx, recipes.DefaultCleanupTimeout)
		err = s.Delete(fctx, n.Path)
		cancel()
	}
	switch {
	case errors.Is(err, backends.ErrNoNode):
		return nil, false, nil
	case err != nil && data != nil && (IsLost(err) || errors.Is(err, backends.ErrUnknownOutcome)):
		return data, false, QueueLost(err)
	case err != nil:
		return nil, false, QueueLost(err)
	}
	return data, true, nil
}

// UncertainTake is the Taken a Take returns with a lost session's error
// when its write on n may have landed (recipes.Taken.Uncertain).
func UncertainTake(n backends.Node, data []byte, wakeups, failed int) recipes.Taken {
	t := Taken(n, data, wakeups, failed)
	t.Uncertain = true
	return t
}

// AckRemoved is the Ack of a consumer whose Take already removed the item
// (at most once): no request. held says whether a Take returned an item
// since the last Ack.
func AckRemoved(s backends.Session, held *bool) error {
	if !*held {
		return fmt.Errorf("recipe: ack: %w", recipes.ErrNotTaken)
	}
	*held = false
	if Ended(s) {
		return QueueLost(nil)
	}
	return nil
}

// AwaitChange waits for a queue listing's watch to fire. It returns
// woke=true for a notification, QueueLost when the session ends, ctx's
// error when ctx is done, and (false, nil) when the watch ended without an
// event (list again).
func AwaitChange(ctx context.Context, s backends.Session, events <-chan backends.Event) (bool, error) {
	_, woke, err := AwaitItem(ctx, s, events)
	return woke, err
}

// AwaitItem is AwaitChange that also returns the notification (zero unless
// woke): its Data is the node's new data where the backend's notification
// carries it (backends.Event), which spares the read.
func AwaitItem(ctx context.Context, s backends.Session, events <-chan backends.Event) (backends.Event, bool, error) {
	w, ev, err := wait(ctx, s, events, nil)
	if errors.Is(err, backends.ErrSessionLost) {
		return backends.Event{}, false, QueueLost(err)
	}
	if w != First {
		return backends.Event{}, false, err
	}
	return ev, true, err
}

// ItemConsumer is what the consumers that take an item by deleting it
// share (recipes/naive's Queue, recipes/fair's BatchQueue): the items'
// directory, made on the first listing, the claim of one item, and Ack
// with no request. They differ in when they list.
type ItemConsumer struct {
	S      backends.Session
	Items  string // <path>/items
	parent *Parent
	pkg    string // error prefix: "naive", "fair"
	held   bool
}

// NewItemConsumer returns family pkg's consumer of the queue at path on s.
// It makes no request.
func NewItemConsumer(pkg string, s backends.Session, path string) ItemConsumer {
	items := path + "/" + ItemsDir
	return ItemConsumer{S: s, Items: items, parent: NewParent(s, items), pkg: pkg}
}

// Unacked is the error of a Take while the last item is not acknowledged,
// else nil.
func (c *ItemConsumer) Unacked() error {
	if c.held {
		return fmt.Errorf("%s: take: the last item was not acknowledged", c.pkg)
	}
	return nil
}

// ListW makes the items' directory on the first call and lists it with a
// watch armed on ctx.
func (c *ItemConsumer) ListW(ctx context.Context) ([]backends.Node, <-chan backends.Event, error) {
	var (
		kids   []backends.Node
		events <-chan backends.Event
	)
	_, err := c.parent.Create(ctx, func(ctx context.Context) (backends.Node, error) {
		var err error
		kids, events, err = c.S.ChildrenW(ctx, c.Items)
		return backends.Node{}, err
	})
	return kids, events, err
}

// Claim takes item n by deleting it (TakeByDelete), with the wake-ups and
// failed claims of the Take so far. taken is false, with a nil error, when
// another consumer took it first; a take whose delete may have landed
// returns UncertainTake with the error. A taken item is held until Ack.
func (c *ItemConsumer) Claim(ctx context.Context, n backends.Node, wakeups, failed int) (t recipes.Taken, taken bool, err error) {
	data, ok, err := TakeByDelete(ctx, c.S, n)
	switch {
	case err != nil && data != nil:
		return UncertainTake(n, data, wakeups, failed), false, err
	case err != nil || !ok:
		return recipes.Taken{}, false, err
	}
	c.held = true
	return Taken(n, data, wakeups, failed), true, nil
}

// Hold marks an item taken another way (recipes/fair's hand-off) as held
// until Ack.
func (c *ItemConsumer) Hold() { c.held = true }

// Ack makes no request: the item is already gone. See recipes.Consumer.
func (c *ItemConsumer) Ack(context.Context) error { return AckRemoved(c.S, &c.held) }
