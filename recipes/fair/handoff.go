package fair

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// HandoffQueue is the herd-free queue whose producers hand each item to
// one idle consumer: one notification an item however many consumers are
// idle, and no consumer watches the items. None of Curator's, kazoo's or
// etcd's queues has it; it needs conditional multi-node writes
// (backends.Committer: ZooKeeper's multi with version checks, etcd's Txn).
//
// Algorithm. Two directories under the queue's path, each with a version
// that only a Bump moves: <path>/items, the backlog, and <path>/idle, the
// consumers waiting for an item.
//
//   - A consumer with nothing to take goes idle in one Commit: Check that
//     the items' version is the one its last listing saw (nothing was put
//     in the backlog since), create its ephemeral sequential node
//     <path>/idle/w-<tag>-<seq>, Bump the idle version. It then watches its
//     own node (ExistsW) and sleeps. If the Check fails, it goes idle all
//     the same (the Commit without the Check), lists the backlog again and
//     works it down before it watches its node (see await); a Take that
//     returns a backlog item meanwhile withdraws the node (OpDeleteFresh)
//     unless a producer handed it an item already, which the consumer's
//     next Take reads first.
//   - A producer lists the idle consumers (ChildrenVersion). If there are
//     any, it hands the item to one of them, picked at random so that
//     producers seldom pick the same, with one OpSetFresh on that
//     consumer's node: of two producers only the first succeeds (the other
//     lists again and picks another). That write is the one notification.
//     It leaves out of its listings the nodes that refused it and, on
//     etcd, the nodes the listing shows written (the range carries each
//     key's version), and hands items to one listing's consumers for up
//     to uses of them before it lists again.
//     If none is idle, it puts the item in the backlog in one Commit: Check
//     that the idle version is the one its listing saw (no consumer went
//     idle since), create the ephemeral sequential node
//     <path>/items/q<PPP>-<seq> (its producer's, as recipe.ItemProducer's
//     items), Bump the items' version.
//   - The woken consumer reads the item from its node, or, on etcd, from
//     the notification, which carries the value put. The node, spent, is
//     deleted by the consumer's next Commit going idle (or, if its next
//     Take finds a backlog or its ctx ended, by a delete of its own); until
//     then ZooKeeper's producers list it until it refuses them (a node
//     written once never accepts again), and etcd's leave it out of any
//     listing made after its write.
//   - A consumer with a backlog (its listing held items) takes them as the
//     recipes page's consumer does, first of its list first, each by a read
//     and a delete; another consumer's delete first is a failed claim,
//     after which it picks among the first items of its list at random (see
//     next), and after a second one on the same list it lists again. With
//     priorities it lists afresh at every Take.
//
// The two Checks close the race between a consumer going idle and a
// producer filling the backlog: both Commits are atomic, so whichever
// lands second finds the other's Bump and fails (backends.ErrConflict). A
// producer refused lists again and finds the consumer; a consumer refused
// goes idle unchecked and lists the backlog again. No item waits in the
// backlog while a consumer sleeps: a backlog put that lands after a
// consumer's going idle comes from a listing that saw its Bump, and so
// passed its node over only if it was written (the consumer reads rather
// than sleeps) or withdrawn (it is not idle); every item put before is in
// the listing the consumer works down before it sleeps.
//
// Cost when consumers keep up: one notification an item and five requests
// or fewer (four on etcd): the producer's hand-off and its listing (shared
// by several items, see uses); the consumer's Commit (which also deletes
// its last spent node), ExistsW and, on ZooKeeper, read (etcd's
// notification carries the item); plus a refused hand-off
// where another producer took the consumer first, or the consumer had just
// taken an item (its spent node, still listed). Bytes: a producer's
// listing is O(idle and spent nodes) on both backends. Under a backlog it
// costs what the recipes page's queue does (a listing now and then, a read
// and a delete an item, failed claims among consumers working down the
// same list), and no notification. A consumer whose checked going idle
// was refused pays for that item the refused Commit, the unchecked one, a
// listing and, if it takes from the backlog, a withdrawal.
//
// Priorities: the backlog is served most urgent first. An item is handed
// over only to an idle consumer; one that went idle unchecked may have a
// backlog to work down, and an item handed to it then is read at its next
// Take, before more urgent items of that backlog.
//
// Delivery: at most once. An item put in the backlog lives as long as its
// producer's session, as recipe.ItemProducer's; an item handed over lives
// in its consumer's node, as long as the consumer's session. A consumer
// lost after an item was handed to it and before it read it loses the item
// with its node, as does one that a producer handed it while it took a
// backlog item and whose session ends before its next Take. A read that
// failed otherwise is tried again by the next Take.
//
// Cancellation: a Take whose ctx ends while it is idle (waiting, or
// working down the backlog after going idle unchecked) withdraws its node
// with OpDeleteFresh, which fails if a producer handed it an item first:
// that item is then read and returned, with a nil error, as taken before
// the Take noticed its ctx's end. A withdrawal that fails (no quorum, say)
// leaves the node to the consumer's next Take, which waits on it again
// rather than make another.
//
// Leftovers: a Commit of unknown outcome (a lost reply, or one cut off by
// the Take's ctx after it was sent) may have made the consumer's idle
// node; the consumer looks for it by its tag, then and once more at its
// next going idle (then listing the backlog again first, since it may have
// landed after that listing), and waits on it or, when its ctx ended,
// withdraws it as above. A Commit that lands later still leaves an idle
// node that nobody waits on until the consumer's session ends: an item
// handed to it is lost with it.
type HandoffQueue struct {
	opts []recipes.Option
}

var _ recipes.QueueFactory = HandoffQueue{}

// NewHandoffQueue returns the hand-off queue; recipes.WithCleanupTimeout
// bounds the fresh context on which a cancelled Take withdraws from the
// idle line (default 5s).
func NewHandoffQueue(opts ...recipes.Option) HandoffQueue { return HandoffQueue{opts: opts} }

// handoff is what a producer and a consumer of one HandoffQueue share.
type handoff struct {
	s              backends.Session
	cm             backends.Committer
	items, idle    string
	itemsP, idleP  *recipe.Parent
	cleanupTimeout time.Duration
}

func (q HandoffQueue) open(s backends.Session, path string) (handoff, error) {
	cm, ok := s.(backends.Committer)
	if !ok {
		return handoff{}, fmt.Errorf("fair: hand-off queue: %T cannot commit conditional writes: %w", s, recipes.ErrUnsupported)
	}
	items, idle := path+"/"+recipe.ItemsDir, path+"/"+recipe.IdleDir
	return handoff{s: s, cm: cm, items: items, idle: idle,
		itemsP: recipe.NewParent(s, items), idleP: recipe.NewParent(s, idle),
		cleanupTimeout: recipes.NewOptions(q.opts...).CleanupTimeout}, nil
}

// list lists dir (made on first use) with its version.
func (h *handoff) list(ctx context.Context, dir string, p *recipe.Parent) ([]backends.Node, int64, error) {
	var (
		kids    []backends.Node
		version int64
	)
	_, err := p.Create(ctx, func(ctx context.Context) (backends.Node, error) {
		var err error
		kids, version, err = h.cm.ChildrenVersion(ctx, dir)
		return backends.Node{}, err
	})
	return kids, version, err
}

// Producer returns the producer of the queue at path on s. It makes no
// request; recipes.ErrUnsupported if s cannot commit.
func (q HandoffQueue) Producer(s backends.Session, path string, _ recipes.QueueConfig) (recipes.Producer, error) {
	h, err := q.open(s, path)
	if err != nil {
		return nil, err
	}
	return &handoffProducer{handoff: h}, nil
}

// handoffProducer is one client's producer of a HandoffQueue.
type handoffProducer struct {
	handoff
	// idle are the idle consumers of the last listing not tried yet, in
	// random order (so that producers seldom pick the same), and uses how
	// many more items may go to them before the producer lists again.
	idle []backends.Node
	uses int
	// refused are the nodes whose hand-off was refused: written once, a
	// node never accepts again, so they are left out of listings (spent
	// nodes, whose consumers have not taken again yet).
	refused map[string]bool
}

// reuse is the share of a listing's idle consumers that a producer hands
// items to before it lists again, once the listing is long: 1 in reuse of
// them.
const reuse = 8

// uses is how many items a producer hands to the consumers of a listing of
// n idle ones before it lists again (a refusal ends it sooner): half of
// them, at most reuse or n/reuse, whichever is more, and at least one. A
// listing is a read of O(n) bytes; a refusal, a write wasted and a listing
// (another producer handed that consumer an item since). With 10 consumers
// on a local etcd, a listing at every item (its cost with n/reuse) kept
// two producers from 400 items/s.
func uses(n int) int {
	return max(1, min(n/2, max(reuse, n/reuse)))
}

// Put hands data to an idle consumer or, with none idle, puts it in the
// backlog. See recipes.Producer and HandoffQueue.
//
// A listing is a read, and a refused hand-off a write, which costs a
// ZooKeeper server a log append. So a producer lists again after any
// refusal (the node was written since), and otherwise hands items to the
// consumers of one listing for some of them (see uses): a listing of them
// all at every item costs O(idle consumers) bytes and server work an item
// (1,000 idle on a local etcd: the producers fell behind 400 items/s).
func (p *handoffProducer) Put(ctx context.Context, data []byte, priority int) error {
	if priority < 0 || priority > recipes.MaxPriority {
		return fmt.Errorf("fair: put: priority %d outside 0..%d", priority, recipes.MaxPriority)
	}
	handed := append([]byte(recipe.ItemPrefix(priority)), data...)
	for {
		var version int64
		if p.uses <= 0 || len(p.idle) == 0 {
			idle, v, err := p.list(ctx, p.handoff.idle, p.idleP)
			if err != nil {
				return recipe.QueueLost(err)
			}
			idle = p.unrefused(idle)
			rand.Shuffle(len(idle), func(i, j int) { idle[i], idle[j] = idle[j], idle[i] })
			p.idle, p.uses, version = idle, uses(len(idle)), v
		}
		if len(p.idle) > 0 {
			w := p.idle[0]
			p.idle = p.idle[1:]
			_, err := p.cm.Commit(ctx, backends.SetFresh(w.Path, handed))
			switch {
			case err == nil:
				p.uses--
				return nil // handed over
			case !errors.Is(err, backends.ErrConflict):
				return recipe.QueueLost(err)
			}
			if p.refused == nil {
				p.refused = map[string]bool{}
			}
			p.refused[w.Name] = true
			p.uses = 0 // it had an item already, or left: list again
			continue
		}
		_, err := p.itemsP.Create(ctx, func(ctx context.Context) (backends.Node, error) {
			_, err := p.cm.Commit(ctx, backends.Check(p.handoff.idle, version),
				backends.CreateIn(p.items, recipe.ItemPrefix(priority), data), backends.Bump(p.items))
			return backends.Node{}, err
		})
		switch {
		case err == nil:
			return nil // in the backlog
		case !errors.Is(err, backends.ErrConflict):
			return recipe.QueueLost(err)
		}
		// A consumer went idle since the listing: hand it the item.
	}
}

// unrefused drops from a listing the nodes that refused a hand-off or
// that the listing says were written (etcd's: spent nodes), and forgets
// the refused ones no longer listed.
func (p *handoffProducer) unrefused(idle []backends.Node) []backends.Node {
	listed := make(map[string]bool, len(idle))
	kept := idle[:0]
	for _, n := range idle {
		listed[n.Name] = true
		if !p.refused[n.Name] && n.DataVersion == 0 {
			kept = append(kept, n)
		}
	}
	for name := range p.refused {
		if !listed[name] {
			delete(p.refused, name)
		}
	}
	return kept
}

// Consumer returns one client's consumer of the queue at path on s. It
// makes no request; recipes.ErrUnsupported if s cannot commit.
func (q HandoffQueue) Consumer(s backends.Session, path string, cfg recipes.QueueConfig) (recipes.Consumer, error) {
	h, err := q.open(s, path)
	if err != nil {
		return nil, err
	}
	return &handoffConsumer{handoff: h, ItemConsumer: recipe.NewItemConsumer("fair", s, path), priorities: cfg.Priorities > 1}, nil
}

// handoffConsumer is one client's consumer of a HandoffQueue.
type handoffConsumer struct {
	handoff
	recipe.ItemConsumer
	priorities bool

	batch   []backends.Node // the backlog as last listed, not yet tried
	listed  bool            // version is that listing's
	version int64
	// contended: a claim of this batch failed (other consumers work down
	// the same list), so the next are picked at random near its head.
	contended bool
	misses    int // failed claims on this batch
	// spent is the idle node of the consumer's last hand-off, read and not
	// yet deleted: its next Commit going idle deletes it (the hand-off's
	// sixth request saved), or the next Take if it goes no further.
	spent string
	// waiting is an idle node of this consumer that may hold an item or
	// get one: one whose withdrawal or read failed, or that a producer
	// handed an item while the consumer took another from the backlog
	// (leave). The next Take waits on it (or reads it) before anything
	// else.
	waiting backends.Node
	// mine is the consumer's idle node made without a Check of the
	// backlog, or found after a Commit of unknown outcome (see await):
	// the Take lists the backlog and works it down before it waits on it,
	// and withdraws it if it returns otherwise (leave).
	mine backends.Node
	// unknown is the tag of a going-idle Commit of unknown outcome whose
	// node was not found: the next going idle looks for it once more.
	unknown string
}

// errRelist: going idle found an item put since the last listing.
var errRelist = errors.New("fair: the backlog changed")

// Take takes the next item of the backlog or, with none, waits idle for a
// producer to hand it one. See recipes.Consumer and HandoffQueue.
func (c *handoffConsumer) Take(ctx context.Context) (t recipes.Taken, err error) {
	if err := c.Unacked(); err != nil {
		return recipes.Taken{}, err
	}
	if recipe.Ended(c.s) {
		return recipes.Taken{}, recipe.QueueLost(nil)
	}
	if c.waiting.Path != "" {
		me := c.waiting
		c.waiting = backends.Node{}
		if t, err := c.wait(ctx, me); !errors.Is(err, errRelist) {
			return t, err
		}
	}
	defer func() {
		if c.mine.Path != "" {
			t, err = c.leave(ctx, t, err)
		}
	}()
	if c.priorities {
		c.batch, c.listed = nil, false // a more urgent item may have come
	}
	var failed int
	for {
		if err := ctx.Err(); err != nil {
			return recipes.Taken{}, errors.Join(err, c.dropSpent(ctx))
		}
		switch {
		case len(c.batch) > 0:
			if err := c.dropSpent(ctx); err != nil {
				return recipes.Taken{}, err
			}
			i := c.next()
			n := c.batch[i]
			c.batch = slices.Delete(c.batch, i, i+1)
			t, taken, err := c.Claim(ctx, n, 0, failed)
			if err != nil {
				// n may still be queued: list again before going idle.
				c.batch, c.listed = nil, false
			}
			if err != nil || taken {
				return t, err
			}
			failed++
			c.contended = true
			if c.misses++; c.misses >= staleAfter {
				// Other consumers took the head of this list since it
				// was made: a fresh listing costs less than trying on.
				c.batch, c.listed = nil, false
			}
		case !c.listed:
			kids, version, err := c.list(ctx, c.items, c.itemsP)
			if err != nil {
				return recipes.Taken{}, recipe.QueueLost(err)
			}
			recipe.SortItems(kids)
			c.batch, c.version, c.listed, c.contended, c.misses = kids, version, true, false, 0
		default:
			if c.mine.Path != "" {
				// Idle already (see await), and the backlog listed since
				// is worked down: wait.
				me := c.mine
				c.mine = backends.Node{}
				t, err = c.wait(ctx, me)
			} else {
				t, err = c.await(ctx)
			}
			if errors.Is(err, errRelist) {
				c.listed = false
				continue
			}
			t.FailedClaims = failed
			return t, err
		}
	}
}

// leave ends a Take that returns (t, err) while the consumer is idle
// (mine) without having waited on it: it withdraws that node, so that no
// producer hands an item to a consumer not in Take. If a producer did
// already, a Take that returns no item returns that one instead (read,
// with a nil error, as a cancelled wait does); one that returns an item
// leaves it to the next Take, which reads it first (waiting), as it does a
// node whose withdrawal failed.
func (c *handoffConsumer) leave(ctx context.Context, t recipes.Taken, err error) (recipes.Taken, error) {
	me := c.mine
	c.mine = backends.Node{}
	if t.Name == "" && err != nil {
		if handed, werr := c.withdraw(ctx, me, 0); handed.Name != "" && werr == nil {
			return handed, nil
		}
		return t, err
	}
	fctx, cancel := recipe.Fresh(ctx, c.cleanupTimeout)
	defer cancel()
	if _, werr := c.cm.Commit(fctx, backends.DeleteFresh(me.Path)); werr != nil {
		c.waiting = me // handed an item (ErrConflict), or not withdrawn
	}
	return t, err
}

// staleAfter is how many failed claims on one listing make a consumer
// list again: each failed claim is a request, like a listing, and once
// two items of a list were gone its head is likely taken.
const staleAfter = 2

// spread is how far down the backlog's head a consumer that met another
// on the same list picks its next item.
const spread = 16

// next is the index in the batch of the item to claim next: its head, or,
// once contended, one picked at random among the first spread items of
// the head's priority. Every consumer that listed the same backlog works
// down it in the same order; after a failed claim each spreads out, so
// that a backlog does not become a race of all consumers for each item
// (the recipes page's queue), which made the backlog grow faster than the
// consumers took it at 400 items/s and 10 consumers on a local ZooKeeper.
// Items come out of put order by at most spread places; a consumer alone
// on the queue never meets another and keeps put order.
func (c *handoffConsumer) next() int {
	if !c.contended {
		return 0
	}
	head := recipe.ItemPriority(c.batch[0].Name)
	n := 1
	for n < min(len(c.batch), spread) && recipe.ItemPriority(c.batch[n].Name) == head {
		n++
	}
	return rand.IntN(n)
}

// dropSpent deletes the spent idle node, if any, on a context that
// outlives ctx a little (it holds no item: only the session's end would
// remove it otherwise).
func (c *handoffConsumer) dropSpent(ctx context.Context) error {
	if c.spent == "" {
		return nil
	}
	fctx, cancel := recipe.Outlive(ctx, c.cleanupTimeout)
	defer cancel()
	err := c.s.Delete(fctx, c.spent)
	if err != nil && !errors.Is(err, backends.ErrNoNode) {
		return recipe.QueueLost(fmt.Errorf("fair: take: deleting %s, the last hand-off's node: %w", c.spent, err))
	}
	c.spent = ""
	return nil
}

// await goes idle, if nothing was put in the backlog since the last
// listing, and waits for a producer's hand-off. If something was put, it
// goes idle all the same, without the Check, and returns errRelist: Take
// lists the backlog again and works it down before it waits on that node
// (mine). Going idle only on an unchanged backlog races every producer's
// put: at 400 items/s and 10 consumers on a local etcd the consumers lost
// that race for a whole case, never went idle (so the producers kept
// filling the backlog), and worked down a backlog of a few items all
// together, 4.5 failed claims and 12.5 requests an item.
//
// Unchecked, no item waits in the backlog while the consumer sleeps: a
// producer's backlog put that lands after the consumer's Commit Checks an
// idle version that includes that Commit's Bump, so the producer's listing
// held the consumer's node and passed it over only if it was written (the
// consumer reads it rather than sleeps) or withdrawn (the consumer is not
// idle). Every item put before is in the listing the consumer works down.
func (c *handoffConsumer) await(ctx context.Context) (recipes.Taken, error) {
	if c.unknown != "" {
		// A going-idle Commit of unknown outcome may have landed since.
		prefix := c.unknown
		c.unknown = ""
		n, found, err := c.find(ctx, prefix)
		switch {
		case err != nil:
			return recipes.Taken{}, recipe.QueueLost(err)
		case found:
			// It may have landed after the listing since, and been
			// unchecked: list the backlog before waiting on it.
			c.mine = n
			return recipes.Taken{}, errRelist
		}
	}
	me, err := c.goIdle(ctx, backends.Check(c.items, c.version))
	if errors.Is(err, backends.ErrConflict) {
		// An item came, or the spent node was gone already (a Commit of
		// unknown outcome deleted it): delete it alone, go idle
		// unchecked, and list.
		if err := c.dropSpent(ctx); err != nil {
			return recipes.Taken{}, err
		}
		if ctx.Err() != nil {
			return recipes.Taken{}, ctx.Err()
		}
		if me, err = c.goIdle(ctx); err == nil {
			c.mine = me
			return recipes.Taken{}, errRelist
		}
	}
	if err != nil {
		return recipes.Taken{}, err
	}
	return c.wait(ctx, me)
}

// goIdle makes the consumer's idle node in one Commit with the ops given
// (and the deletion of its spent node) and returns it. Its errors:
// backends.ErrConflict when an op's condition failed; errRelist when the
// Commit's outcome was unknown and its node was not found (the next going
// idle looks for it again); ctx's when ctx ended first; else QueueLost.
func (c *handoffConsumer) goIdle(ctx context.Context, checks ...backends.Op) (backends.Node, error) {
	prefix := fmt.Sprintf("w-%016x-", rand.Uint64())
	ops := append(checks, backends.CreateIn(c.idle, prefix, nil), backends.Bump(c.idle))
	if c.spent != "" {
		ops = append(ops, backends.DeleteOp(c.spent))
	}
	var me backends.Node
	// The Commit outlives ctx a little, so that a Take cancelled while it
	// is in flight learns whether it made the node, and withdraws it.
	octx, ocancel := recipe.Outlive(ctx, c.cleanupTimeout)
	_, err := c.idleP.Create(octx, func(ctx context.Context) (backends.Node, error) {
		made, err := c.cm.Commit(ctx, ops...)
		if err == nil {
			me = made[0]
		}
		return me, err
	})
	ocancel()
	switch {
	case err == nil:
		c.spent = ""
		return me, nil
	case errors.Is(err, backends.ErrConflict):
		return backends.Node{}, err
	case (errors.Is(err, backends.ErrUnknownOutcome) || ctx.Err() != nil) && !recipe.Ended(c.s):
		// The node may have been made (a lost reply, or a call cut off by
		// ctx after it was sent): look for it by its tag, on a fresh
		// context if ctx ended.
		fctx, cancel := recipe.Fresh(ctx, c.cleanupTimeout)
		n, found, ferr := c.find(fctx, prefix)
		cancel()
		switch {
		case ferr != nil:
			c.unknown = prefix
			return backends.Node{}, recipe.QueueLost(errors.Join(err, ferr))
		case found:
			c.spent = "" // deleted in the same Commit
			return n, nil
		}
		c.unknown = prefix
		if ctx.Err() != nil {
			return backends.Node{}, ctx.Err()
		}
		return backends.Node{}, errRelist
	}
	return backends.Node{}, recipe.QueueLost(err)
}

// wait waits on the consumer's idle node me until a producer hands it an
// item, and reads it; if ctx ends first, it withdraws me.
func (c *handoffConsumer) wait(ctx context.Context, me backends.Node) (recipes.Taken, error) {
	var wakeups int
	for {
		if ctx.Err() != nil {
			return c.withdraw(ctx, me, wakeups)
		}
		wctx, cancel := context.WithCancel(ctx)
		exists, n, events, err := c.s.ExistsW(wctx, me.Path)
		switch {
		case err != nil && (ctx.Err() != nil || !recipe.Ended(c.s)):
			// The node may get an item that nobody waits for: withdraw it.
			cancel()
			t, werr := c.withdraw(ctx, me, wakeups)
			if werr == nil && t.Name == "" {
				// Withdrawn, no item read (read names every item it
				// returns): the watch's failure is the Take's.
				werr = err
			}
			return t, werr
		case err != nil:
			cancel()
			return recipes.Taken{}, recipe.QueueLost(err)
		case !exists && recipe.Ended(c.s):
			cancel()
			return recipes.Taken{}, recipe.QueueLost(nil)
		case !exists:
			// Only this consumer removes it: a withdrawal whose outcome
			// was unknown had landed. Go idle again.
			cancel()
			return recipes.Taken{}, errRelist
		case n.DataVersion > 0:
			cancel() // handed over before the watch was armed
			return c.read(ctx, me, wakeups)
		}
		ev, woke, err := recipe.AwaitItem(ctx, c.s, events)
		cancel()
		switch {
		case woke && ev.Type == backends.EventDataChanged && ev.Data != nil:
			// The notification carries the item (etcd's): no read.
			return c.handed(me, ev.Data, wakeups+1), nil
		case woke:
			wakeups++
			return c.read(ctx, me, wakeups)
		}
		if err != nil && ctx.Err() == nil {
			return recipes.Taken{}, err
		}
		// ctx ended (withdraw above), or the watch ended without an event
		// (arm it again).
	}
}

// find looks for this consumer's idle node by its tag after a Commit of
// unknown outcome.
func (c *handoffConsumer) find(ctx context.Context, prefix string) (backends.Node, bool, error) {
	kids, err := c.s.Children(ctx, c.idle)
	if err != nil {
		return backends.Node{}, false, err
	}
	for _, k := range kids {
		if strings.HasPrefix(k.Name, prefix) {
			return k, true, nil
		}
	}
	return backends.Node{}, false, nil
}

// read takes the item handed to the consumer's idle node me: one read. The
// node is left to the consumer's next Commit (spent). A read that fails
// leaves me to the next Take, which reads it again.
func (c *handoffConsumer) read(ctx context.Context, me backends.Node, wakeups int) (recipes.Taken, error) {
	// The read outlives ctx a little: the item is this consumer's already.
	octx, cancel := recipe.Outlive(ctx, c.cleanupTimeout)
	defer cancel()
	data, _, err := c.s.Get(octx, me.Path)
	switch {
	case errors.Is(err, backends.ErrNoNode) || (err != nil && recipe.Ended(c.s)):
		return recipes.Taken{}, recipe.QueueLost(err) // only its session removes it
	case err != nil:
		c.waiting = me
		return recipes.Taken{}, fmt.Errorf("fair: take: reading the item handed to %s (the next Take reads it again): %w", me.Path, err)
	}
	return c.handed(me, data, wakeups), nil
}

// handed takes the item handed to the consumer's idle node me, whose data
// is handed (read, or carried by the notification). The node is left to
// the consumer's next Commit (spent).
func (c *handoffConsumer) handed(me backends.Node, handed []byte, wakeups int) recipes.Taken {
	c.spent = me.Path
	prio, item := splitHanded(handed)
	c.Hold()
	return recipes.Taken{Data: item, Priority: prio, Name: recipe.ItemPrefix(prio) + me.Name, Wakeups: wakeups}
}

// withdraw removes the idle node me of a Take whose ctx ended (or whose
// watch failed), unless a producer handed it an item first: that item is
// read and returned. A withdrawal that fails leaves me to the next Take.
func (c *handoffConsumer) withdraw(ctx context.Context, me backends.Node, wakeups int) (recipes.Taken, error) {
	fctx, cancel := recipe.Fresh(ctx, c.cleanupTimeout)
	defer cancel()
	_, err := c.cm.Commit(fctx, backends.DeleteFresh(me.Path))
	switch {
	case errors.Is(err, backends.ErrConflict):
		return c.read(fctx, me, wakeups)
	case err != nil && recipe.Ended(c.s):
		return recipes.Taken{}, recipe.QueueLost(err)
	case err != nil:
		c.waiting = me
		return recipes.Taken{}, fmt.Errorf("fair: take: withdrawing %s from the idle line (the next Take waits on it): %w", me.Path, errors.Join(err, ctx.Err()))
	}
	return recipes.Taken{}, ctx.Err()
}

// splitHanded splits a handed item into its priority and data.
func splitHanded(handed []byte) (int, []byte) {
	n := len(recipe.ItemPrefix(0))
	if len(handed) < n {
		return 0, handed
	}
	return recipe.ItemPriority(string(handed[:n])), handed[n:]
}
