package native

import (
	"context"
	"errors"
	"fmt"

	recipe3 "go.etcd.io/etcd/client/v3/experimental/recipes"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// ErrPriorities: the native queue was asked for priorities. etcd's
// experimental PriorityQueue allocates its sequence through a bookkeeping
// key "__<prefix>", which lies outside zkbench's namespace (/zkbench/...):
// it is refused rather than left behind.
var ErrPriorities = errors.New("native: etcd's PriorityQueue writes a key outside the namespace (__<prefix>); the native queue runs without --priorities")

// Queue is etcd's experimental recipe Queue
// (go.etcd.io/etcd/client/v3/experimental/recipes), on the backend
// session's client, as a baseline. etcd only; there is no go-zookeeper
// queue, so on ZooKeeper every call fails with ErrUnsupported.
//
// Algorithm (the library's): Enqueue puts <path>/items/<unix-nano> if
// absent, with no lease (items outlive their producer, unlike the ZooKeeper
// recipes page's). Dequeue reads the oldest key under the prefix (by create
// revision, limit 1) and deletes it in a transaction on its mod revision;
// if the queue is empty it watches the whole prefix from the read's
// revision and, on the first put, tries to delete that key, starting over
// if another consumer did first.
//
// Herd behaviour: every idle consumer watches the prefix, so one new item
// wakes every idle consumer, which all race to delete it: one wins, the
// others (C-1 failed claims for C idle) read the queue again. The library
// counts none of this for us: its requests bypass backends/instrument, so
// only the servers' counts show it (Taken.Wakeups and FailedClaims are 0).
//
// Delivery: at most once: the delete is the take.
//
// Contexts: the library takes none (context.TODO inside), so a Take
// cancelled or a session lost while Dequeue runs returns at once and
// leaves that Dequeue running on the client until it takes an item or the
// client closes with the session. The consumer's next Take returns such an
// item first; one taken after the consumer's last Take is "stranded"
// (Stranded), which the workload reports. When the client closes under a
// Dequeue waiting on an empty queue, the library dereferences a nil watch
// event (waitEvents returns nil on a closed watch channel): the wrapper
// recovers that panic and reports an error.
type Queue struct{}

var _ recipes.QueueFactory = Queue{}

func etcdQueue(s backends.Session, path string, cfg recipes.QueueConfig) (EtcdSession, error) {
	es, ok := Underlying(s).(EtcdSession)
	if !ok || es.Client() == nil {
		return nil, fmt.Errorf("native: queue %s on %T: %w", path, Underlying(s), ErrUnsupported)
	}
	if cfg.Priorities > 1 {
		return nil, fmt.Errorf("native: queue %s: %w", path, ErrPriorities)
	}
	return es, nil
}

// Producer returns the library queue's producer on s's etcd client.
func (Queue) Producer(s backends.Session, path string, cfg recipes.QueueConfig) (recipes.Producer, error) {
	es, err := etcdQueue(s, path, cfg)
	if err != nil {
		return nil, err
	}
	return &etcdProducer{s: s, q: recipe3.NewQueue(es.Client(), path+"/"+recipe.ItemsDir)}, nil
}

// Consumer returns the library queue's consumer on s's etcd client.
func (Queue) Consumer(s backends.Session, path string, cfg recipes.QueueConfig) (recipes.Consumer, error) {
	es, err := etcdQueue(s, path, cfg)
	if err != nil {
		return nil, err
	}
	return &etcdConsumer{s: s, q: recipe3.NewQueue(es.Client(), path+"/"+recipe.ItemsDir)}, nil
}

type etcdProducer struct {
	s backends.Session
	q *recipe3.Queue
}

// Put runs Enqueue; if ctx ends or the session is lost first, the put may
// still land (an error matching backends.ErrUnknownOutcome).
func (p *etcdProducer) Put(ctx context.Context, data []byte, priority int) error {
	if priority != 0 {
		return fmt.Errorf("native: put: %w", ErrPriorities)
	}
	done := make(chan error, 1)
	go func() { done <- p.q.Enqueue(string(data)) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("native: enqueue: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("native: enqueue: %w (%w)", ctx.Err(), backends.ErrUnknownOutcome)
	case <-p.s.Done():
		return fmt.Errorf("native: enqueue: %w (%w)", recipe.QueueLost(nil), backends.ErrUnknownOutcome)
	}
}

// dequeued is one Dequeue's outcome.
type dequeued struct {
	data string
	err  error
}

type etcdConsumer struct {
	s       backends.Session
	q       *recipe3.Queue
	held    bool
	pending chan dequeued // a Dequeue whose Take returned early
}

// Take runs Dequeue (or collects the one an earlier Take left running).
func (c *etcdConsumer) Take(ctx context.Context) (recipes.Taken, error) {
	if c.held {
		return recipes.Taken{}, fmt.Errorf("native: take: the last item was not acknowledged")
	}
	if recipe.Ended(c.s) {
		return recipes.Taken{}, recipe.QueueLost(nil)
	}
	if c.pending == nil {
		c.pending = c.dequeue()
	}
	select {
	case d := <-c.pending:
		c.pending = nil
		if d.err != nil {
			if recipe.Ended(c.s) {
				return recipes.Taken{}, recipe.QueueLost(d.err)
			}
			return recipes.Taken{}, fmt.Errorf("native: dequeue: %w", d.err)
		}
		c.held = true
		return recipes.Taken{Data: []byte(d.data)}, nil
	case <-ctx.Done():
		return recipes.Taken{}, ctx.Err()
	case <-c.s.Done():
		return recipes.Taken{}, recipe.QueueLost(nil)
	}
}

// dequeue starts one Dequeue; its outcome waits in the channel.
func (c *etcdConsumer) dequeue() chan dequeued {
	out := make(chan dequeued, 1)
	go func() {
		var d dequeued
		defer func() {
			if r := recover(); r != nil {
				d = dequeued{err: fmt.Errorf("etcd recipe Dequeue panicked (its watch ended with the client): %v", r)}
			}
			out <- d
		}()
		d.data, d.err = c.q.Dequeue()
	}()
	return out
}

// Stranded returns the item a Dequeue took after the Take that started it
// had returned, if no later Take collected it. It waits up to ctx for that
// Dequeue to end, which it does once the session (its client) is closed.
// Not for use concurrently with Take.
func (c *etcdConsumer) Stranded(ctx context.Context) ([]byte, bool) {
	if c.pending == nil {
		return nil, false
	}
	select {
	case d := <-c.pending:
		c.pending = nil
		return []byte(d.data), d.err == nil
	case <-ctx.Done():
		return nil, false
	}
}

// Ack makes no request: the item is already gone.
func (c *etcdConsumer) Ack(context.Context) error { return recipe.AckRemoved(c.s, &c.held) }
