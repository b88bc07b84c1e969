package recipetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// Sizes of the queue tests.
const (
	queueItems     = 60
	queueConsumers = 4
	queueProducers = 3
	queueIdle      = 6
)

// queueEnv is one queue subtest's environment, variant and configuration.
type queueEnv struct {
	*env
	v   variants.Variant[variants.QueueVariant]
	cfg recipes.QueueConfig
}

// queueClient is one client of the queue: a member with a producer and a
// consumer on its session.
type queueClient struct {
	*member
	p recipes.Producer
	q recipes.Consumer
}

// RunQueueSuite runs every queue subtest for variant v on backend b: every
// item taken exactly once with producers and consumers at once, put order
// (and priority order), how many idle consumers one item wakes, a
// cancelled Take, the delivery a consumer lost after Take gives (at most
// or at least once, as the variant says), a hand-off consumer whose going
// idle a put refused, and the namespace left with no
// item, claim or idle node once the sessions closed. Each subtest works
// in a fresh namespace. With only, just the subtests so named run.
func RunQueueSuite(t *testing.T, b backends.Backend, v variants.Variant[variants.QueueVariant], only ...string) {
	subtests := []subtest[*queueEnv]{
		{"ExactlyOnce", testQueueExactlyOnce},
		{"Order", testQueueOrder},
		{"Priorities", testQueuePriorities},
		{"IdleWakes", testQueueIdleWakes},
		{"CancelCleansUp", testQueueCancel},
		{"SessionLostAfterTake", testQueueSessionLost},
		{"FailedDeleteLeavesNoStuckItem", testQueueFailedDelete},
		{"PutWhileConsumerHolds", testQueuePutWhileHolding},
		{"IdleRefusedTakes", testQueueIdleRefusedTakes},
		{"IdleRefusedSleeps", testQueueIdleRefusedSleeps},
	}
	if !v.Supports(b.Kind()) {
		for i := range subtests {
			subtests[i].f = testQueueUnsupported
		}
	}
	runSuite(t, b, "queue", subtests, only, func(e *env) *queueEnv { return &queueEnv{env: e, v: v} })
}

// testQueueUnsupported: a variant that does not run on b says so at
// construction with recipes.ErrUnsupported.
func testQueueUnsupported(e *queueEnv) {
	if _, err := e.v.New.Consumer(e.session(), e.path, recipes.QueueConfig{}); !errors.Is(err, recipes.ErrUnsupported) {
		e.t.Fatalf("%s consumer on %s: %v, want recipes.ErrUnsupported", e.v.Name, e.b.Kind(), err)
	}
}

func (e *queueEnv) newClient() *queueClient {
	e.t.Helper()
	return e.newClientOn(nil)
}

// newClientOn opens a member, its raw session wrapped in wrap (if not nil)
// under the instrument decorator, with the variant's producer and consumer.
func (e *queueEnv) newClientOn(wrap func(backends.Session) backends.Session) *queueClient {
	e.t.Helper()
	m := e.newMemberOn("", wrap)
	s := m.s
	p, err := e.v.New.Producer(s, e.path, e.cfg)
	if err != nil {
		e.t.Fatalf("%s: producer: %v", e.v.Name, err)
	}
	q, err := e.v.New.Consumer(s, e.path, e.cfg)
	if err != nil {
		e.t.Fatalf("%s: consumer: %v", e.v.Name, err)
	}
	return &queueClient{member: m, p: p, q: q}
}

func (e *queueEnv) put(c *queueClient, item string, prio int) {
	e.t.Helper()
	withinDo(e.t, "put "+item, func(ctx context.Context) error { return c.p.Put(ctx, []byte(item), prio) })
}

// take takes and acknowledges one item under opTimeout.
func (e *queueEnv) take(c *queueClient) recipes.Taken {
	e.t.Helper()
	tk := within(e.t, "take", c.q.Take)
	withinDo(e.t, "ack "+string(tk.Data), c.q.Ack)
	return tk
}

// left lists what is below the queue's path besides its directories.
func (e *queueEnv) left() []string {
	e.t.Helper()
	return e.listIn(recipes.QueueItemsDir, recipes.QueueClaimsDir, recipes.QueueIdleDir)
}

func (e *queueEnv) leftBecomes(n int) {
	e.t.Helper()
	e.becomes("queue path", n, e.left)
}

// testQueueExactlyOnce: producers and consumers at once; every item is
// taken exactly once, none is lost, and once every session closed nothing
// is left but the directories.
func testQueueExactlyOnce(e *queueEnv) {
	prods := make([]*queueClient, queueProducers)
	cons := make([]*queueClient, queueConsumers)
	for i := range prods {
		prods[i] = e.newClient()
	}
	for i := range cons {
		cons[i] = e.newClient()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	var (
		mu    sync.Mutex
		seen  = map[string]int{}
		total int
		wg    sync.WaitGroup
		errs  = make(chan error, queueProducers+queueConsumers)
	)
	for i, p := range prods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := i; k < queueItems; k += queueProducers {
				if err := p.p.Put(ctx, []byte(fmt.Sprint("item-", k)), 0); err != nil {
					errs <- fmt.Errorf("put %d: %w", k, err)
					return
				}
			}
		}()
	}
	cctx, stop := context.WithCancel(ctx)
	for _, c := range cons {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				tk, err := c.q.Take(cctx)
				if err != nil {
					if cctx.Err() == nil {
						errs <- fmt.Errorf("take: %w", err)
					}
					return
				}
				time.Sleep(time.Duration(rand.N(3)) * time.Millisecond)
				if err := c.q.Ack(ctx); err != nil {
					errs <- fmt.Errorf("ack: %w", err)
					return
				}
				mu.Lock()
				seen[string(tk.Data)]++
				total++
				if total == queueItems {
					stop()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stop()
	close(errs)
	for err := range errs {
		e.t.Error(err)
	}
	for k := range queueItems {
		if n := seen[fmt.Sprint("item-", k)]; n != 1 {
			e.t.Errorf("item-%d taken %d times, want once", k, n)
		}
	}
	if len(seen) != queueItems {
		e.t.Errorf("%d distinct items taken, want %d", len(seen), queueItems)
	}
	e.leftBecomes(0)
	for _, c := range append(prods, cons...) {
		_ = c.s.Close()
	}
	e.leftBecomes(0)
}

// testQueueOrder: items put one after another are taken in put order by
// one consumer.
func testQueueOrder(e *queueEnv) {
	c := e.newClient()
	for k := range 10 {
		e.put(c, fmt.Sprint("item-", k), 0)
	}
	for k := range 10 {
		if tk := e.take(c); string(tk.Data) != fmt.Sprint("item-", k) {
			e.t.Fatalf("take %d returned %s, want item-%d (put order)", k, tk.Data, k)
		}
	}
	e.leftBecomes(0)
}

// testQueuePriorities: items of three priorities, put shuffled, are taken
// most urgent first, in put order within a priority; a more urgent item
// put while a consumer works through an older list is served next once the
// notification of the change has reached the consumer (it then drops its
// list). Queues promise no more than that: on etcd a watch event travels on
// a stream of its own and may trail the reply to the put that caused it,
// even on the consumer's own session. A variant without priorities refuses
// them.
func testQueuePriorities(e *queueEnv) {
	e.cfg = recipes.QueueConfig{Priorities: 3}
	if !e.v.New.Priorities {
		if _, err := e.v.New.Producer(e.session(), e.path, e.cfg); err == nil {
			e.t.Fatalf("%s: a producer with 3 priorities was made; the variant says it has none", e.v.Name)
		}
		return
	}
	c := e.newClient()
	type item struct {
		name string
		prio int
	}
	var items []item
	for k := range 12 {
		items = append(items, item{fmt.Sprint("item-", k), k % 3})
	}
	for _, it := range items {
		e.put(c, it.name, it.prio)
	}
	want := slices.Clone(items)
	slices.SortStableFunc(want, func(a, b item) int { return a.prio - b.prio })
	for k, w := range want[:6] {
		if tk := e.take(c); string(tk.Data) != w.name || tk.Priority != w.prio {
			e.t.Fatalf("take %d returned %s (priority %d), want %s (priority %d)", k, tk.Data, tk.Priority, w.name, w.prio)
		}
	}
	// The consumer may hold a list of the rest; an urgent item put now
	// comes first once every notification the servers sent the consumer
	// has reached it (its open watches have fired or ended).
	e.put(c, "urgent", 0)
	deadline := time.Now().Add(settleBound)
	for c.c.OpenWatches() > 0 {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d watches of the consumer still open %v after the urgent put", c.c.OpenWatches(), settleBound)
		}
		time.Sleep(pollEvery)
	}
	if tk := e.take(c); string(tk.Data) != "urgent" {
		e.t.Fatalf("after an urgent put, take returned %s (priority %d), want urgent", tk.Data, tk.Priority)
	}
	for range want[6:] {
		e.take(c)
	}
	e.leftBecomes(0)
}

// testQueueIdleWakes measures the herd: with queueIdle consumers asleep
// on an empty queue, one item put wakes at most two of them for the
// herd-free queues (fair: the head of the idle line, then its successor;
// handoff: the one consumer it is handed to) and every one of them for the
// others, as the servers count it.
func testQueueIdleWakes(e *queueEnv) {
	srv := newServerCounts(e.t, e.b)
	prod := e.newClient()
	armedBase := srv.armedSettled()
	cons := make([]*queueClient, queueIdle)
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	type res struct {
		tk  recipes.Taken
		err error
		who int
	}
	got := make(chan res, queueIdle)
	for i := range cons {
		cons[i] = e.newClient()
		go func() {
			tk, err := cons[i].q.Take(ctx)
			got <- res{tk, err, i}
		}()
	}
	// Asleep: one armed watch each (fair: the head on the items, every
	// other on its predecessor in the line; handoff: each on its own node).
	srv.asleep(armedBase, queueIdle)
	idle := srv.notified()
	time.Sleep(quietWindow)
	before := srv.unchanged(idle)
	e.put(prod, "one", 0)
	var r res
	select {
	case r = <-got:
	case <-time.After(opTimeout):
		e.t.Fatalf("no consumer took the item within %v", opTimeout)
	}
	if r.err != nil || string(r.tk.Data) != "one" {
		e.t.Fatalf("take: %q, %v", r.tk.Data, r.err)
	}
	// The notifications the queue owes, counted at the servers: on a
	// cluster a lagging member counts those of its consumers after the
	// take returned.
	owed := int64(1)
	if !e.v.HerdFree {
		owed = queueIdle
	}
	e.awaitWakeups(false, srv, before, owed, nil)
	sent := srv.since(before)
	e.t.Logf("%s: one item to %d idle consumers: %d notifications sent by the servers", e.v.Name, queueIdle, sent)
	if e.v.Name == variants.Handoff {
		// Asleep, a hand-off consumer read nothing; woken, it reads the
		// item from its node on ZooKeeper, whose notifications carry no
		// data, and from the notification on etcd, whose carry the value.
		want := int64(1)
		if e.b.Kind() == backends.Etcd {
			want = 0
		}
		if got := cons[r.who].c.Requests(instrument.OpGet); got != want {
			e.t.Errorf("handoff on %s: the woken consumer made %d reads, want %d", e.b.Kind(), got, want)
		}
	}
	if e.v.HerdFree && sent > 2 {
		e.t.Errorf("herd-free: one item woke %d idle consumers, want at most 2 (the head and its successor)", sent)
	}
	if !e.v.HerdFree && sent < queueIdle {
		e.t.Errorf("herd-prone: one item sent %d notifications to %d idle consumers, want at least %d", sent, queueIdle, queueIdle)
	}
	cancel()
	for range queueIdle - 1 {
		if r := <-got; !errors.Is(r.err, context.Canceled) {
			e.t.Errorf("a Take still waiting returned %q, %v after its ctx ended, want context.Canceled", r.tk.Data, r.err)
		}
	}
	if err := cons[0].q.Ack(context.Background()); err != nil && !errors.Is(err, recipes.ErrNotTaken) {
		e.t.Logf("ack: %v", err)
	}
}

// testQueueCancel: a Take waiting on an empty queue returns ctx's error
// promptly, leaves nothing in the queue's directories, and the next item
// goes to another consumer (or, for the native queue, whose library call
// cannot be cancelled, to that call: Stranded reports it).
func testQueueCancel(e *queueEnv) {
	waiter, other := e.newClient(), e.newClient()
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = waiter.q.Take(ctx)
	}()
	time.Sleep(quietWindow)
	e.cancelled("Take", cancel, done, &err)
	e.leftBecomes(0)
	e.put(other, "after", 0)
	st, native := waiter.q.(recipes.Strander)
	if !native {
		if tk := e.take(other); string(tk.Data) != "after" {
			e.t.Fatalf("take after a cancelled Take: %s", tk.Data)
		}
		e.leftBecomes(0)
		return
	}
	// The abandoned library Dequeue takes it and returns it. Its session
	// closes only after that: closed while the Dequeue's delete was in
	// flight (a loaded machine), the call would end in an error with the
	// item gone.
	e.leftBecomes(0)
	sctx, scancel := context.WithTimeout(context.Background(), opTimeout)
	defer scancel()
	data, ok := st.Stranded(sctx)
	_ = waiter.s.Close()
	if !ok || string(data) != "after" {
		e.t.Fatalf("native: Stranded = %q, %v; want the item the abandoned Dequeue took", data, ok)
	}
}

// testQueueSessionLost: a consumer whose session ends after Take and
// before Ack. At least once: the item is taken again by another consumer.
// At most once: it is gone, and the next consumer gets the next item. Ack
// on the lost session returns recipes.ErrQueueLost.
func testQueueSessionLost(e *queueEnv) {
	a, b, prod := e.newClient(), e.newClient(), e.newClient()
	e.put(prod, "first", 0)
	e.put(prod, "second", 0)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	tk, err := a.q.Take(ctx)
	if err != nil || string(tk.Data) != "first" {
		e.t.Fatalf("take: %q, %v", tk.Data, err)
	}
	if err := a.s.Close(); err != nil {
		e.t.Fatalf("closing the consumer's session: %v", err)
	}
	if err := a.q.Ack(ctx); !errors.Is(err, recipes.ErrQueueLost) {
		e.t.Errorf("Ack on a lost session: %v, want ErrQueueLost", err)
	}
	next := e.take(b)
	switch e.v.New.Delivery {
	case recipes.AtLeastOnce:
		if string(next.Data) != "first" {
			e.t.Errorf("at least once: after the consumer holding first was lost, the next take returned %s, want first again", next.Data)
		}
		e.take(b)
	case recipes.AtMostOnce:
		if string(next.Data) != "second" {
			e.t.Errorf("at most once: after the consumer holding first was lost, the next take returned %s, want second (first is gone)", next.Data)
		}
	default:
		e.t.Fatalf("variant %s declares no delivery", e.v.Name)
	}
	e.leftBecomes(0)
}

// testQueueFailedDelete: deletes that fail the way a cluster without a
// quorum fails them leave no item stuck. At most once: a Take whose delete
// failed returns the error and the item stays for the next Take, the same
// consumer's included. At least
// once: an Ack whose item delete and claim removal failed leaves a stray
// claim that holds the item back from other consumers until the same
// consumer's next Take removes it and takes the item again. The native
// queue's requests go past any decorator to the library's client, so no
// failure can be injected: it refuses a session it cannot reach the
// client of (recipes.ErrUnsupported).
func testQueueFailedDelete(e *queueEnv) {
	flaky := &flakySession{}
	wrap := func(s backends.Session) backends.Session { flaky.Session = s; return flaky }
	if e.v.Name == variants.Native {
		if _, err := e.v.New.Consumer(wrap(e.session()), e.path, e.cfg); !errors.Is(err, recipes.ErrUnsupported) {
			e.t.Fatalf("native consumer on an undecorated wrapper: %v, want ErrUnsupported", err)
		}
		return
	}
	a, b := e.newClientOn(wrap), e.newClient()
	e.put(b, "item", 0)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	switch e.v.New.Delivery {
	case recipes.AtMostOnce:
		flaky.failDeletes.Store(1)
		if _, err := a.q.Take(ctx); !errors.Is(err, errNoQuorum) {
			e.t.Fatalf("Take whose delete failed: %v, want the injected failure", err)
		}
		// The same consumer's next Take finds it (it does not go to
		// sleep on a queue it last saw holding the item), then another
		// consumer takes the next.
		if tk := e.take(a); string(tk.Data) != "item" {
			e.t.Fatalf("after a failed delete the same consumer's next take returned %s", tk.Data)
		}
		e.put(b, "next", 0)
		if tk := e.take(b); string(tk.Data) != "next" {
			e.t.Fatalf("the next item: %s", tk.Data)
		}
	case recipes.AtLeastOnce:
		tk, err := a.q.Take(ctx)
		if err != nil || string(tk.Data) != "item" {
			e.t.Fatalf("take: %q, %v", tk.Data, err)
		}
		flaky.failDeletes.Store(3) // the item's delete and its retry, then the claim's removal
		if err := a.q.Ack(ctx); !errors.Is(err, errNoQuorum) {
			e.t.Fatalf("Ack whose deletes failed: %v, want the injected failure", err)
		}
		if got := e.left(); !slices.Contains(got, recipes.QueueClaimsDir+"/"+tkName(e, tk)) {
			e.t.Fatalf("after the failed Ack the queue holds %q, want the stray claim", got)
		}
		bctx, bcancel := context.WithTimeout(ctx, time.Second)
		if tk, err := b.q.Take(bctx); err == nil {
			e.t.Errorf("another consumer took %s while a stray claim held it", tk.Data)
		}
		bcancel()
		if tk := e.take(a); string(tk.Data) != "item" {
			e.t.Fatalf("the next Take of the consumer with the stray claim returned %s, want item again", tk.Data)
		}
	}
	e.leftBecomes(0)
}

func tkName(e *queueEnv, tk recipes.Taken) string {
	e.t.Helper()
	if tk.Name == "" {
		e.t.Fatalf("taken item has no name")
	}
	return tk.Name
}

// testQueuePutWhileHolding: a consumer that was asleep on the queue took
// an item (the hand-off queue: handed to it) and, holding it, takes no
// other for now; a Put made meanwhile returns at once (the hand-off
// queue's producer must not keep offering it to the busy consumer) and the
// consumer's next Take gets the item.
func testQueuePutWhileHolding(e *queueEnv) {
	if e.v.Name == variants.Native {
		return // its library's Dequeue has no context: testQueueCancel covers it
	}
	srv := newServerCounts(e.t, e.b)
	prod := e.newClient()
	c := e.newClient()
	taken := sleepingTake(srv, c)
	e.put(prod, "first", 0)
	if tk, err := taken(); err != nil || string(tk.Data) != "first" {
		e.t.Fatalf("take: %q, %v", tk.Data, err)
	}
	e.put(prod, "second", 0) // opTimeout bounds it
	withinDo(e.t, "ack first", c.q.Ack)
	if tk := e.take(c); string(tk.Data) != "second" {
		e.t.Fatalf("the next take returned %s, want second", tk.Data)
	}
	e.leftBecomes(0)
}

// sleepingTake starts c's Take under opTimeout and returns once the
// servers hold one more watch than before (it sleeps), with what waits for
// the Take's result.
func sleepingTake(srv *serverCounts, c *queueClient) func() (recipes.Taken, error) {
	armedBase := srv.armedSettled()
	type result struct {
		tk  recipes.Taken
		err error
	}
	got := make(chan result, 1)
	go func() {
		tk, err := withinTake(c)
		got <- result{tk, err}
	}()
	srv.asleep(armedBase, 1)
	return func() (recipes.Taken, error) {
		r := <-got
		return r.tk, r.err
	}
}

// withinTake is one Take under opTimeout.
func withinTake(c *queueClient) (recipes.Taken, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return c.q.Take(ctx)
}
