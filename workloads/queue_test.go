package workloads

import (
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/results"
)

// qput records a put of id at t ms, answered 1 ms later.
func qput(c *QueueChecker, id string, prio int, t time.Duration) {
	c.Putting(id, prio, t*ms)
	c.Put(id, (t+1)*ms, true, false)
}

// qtake records a take of id by consumer from b to e ms, acked or lost.
func qtake(c *QueueChecker, id string, consumer int, b, e time.Duration, acked bool) {
	k := c.Taken(id, consumer, b*ms, e*ms)
	c.Acked(id, k, acked, !acked)
}

// TestQueueChecker: each history gives the delivery findings it should,
// and a checker that sees a violation says so.
func TestQueueChecker(t *testing.T) {
	t.Run("exactly once", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtMostOnce)
		qput(c, "a", 0, 0)
		qput(c, "b", 0, 1)
		qtake(c, "a", 0, 2, 3, true)
		qtake(c, "b", 1, 2, 4, true)
		r := c.Result()
		if r.Safety.Violations != 0 || r.Delivered != 2 || r.Put != 2 || len(r.Delivery) != 2 || r.Delivery[0] != 3*ms {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("taken before a put's answer that never came", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtMostOnce)
		qput(c, "a", 0, 0)
		c.Putting("b", 0, 1*ms) // the case ended before its answer
		c.Putting("c", 0, 2*ms) // never taken either: no finding
		qtake(c, "a", 0, 2, 3, true)
		qtake(c, "b", 1, 2, 4, true)
		r := c.Result()
		if r.Safety.Violations != 0 || r.Put != 1 || r.PutUnknown != 1 || r.Delivered != 2 || len(r.Delivery) != 1 {
			t.Fatalf("want 1 put, 1 taken of unknown put, 2 delivered, 1 delivery timed: %+v", r)
		}
	})
	t.Run("lost and still queued", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtLeastOnce)
		qput(c, "a", 0, 0)
		qput(c, "b", 0, 1)
		c.Queued("b")
		r := c.Result()
		if r.Lost != 1 || r.LostUntaken != 1 || r.StillQueued != 1 || r.Safety.Violations != 1 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("queue not listed at the end", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtLeastOnce)
		qput(c, "a", 0, 0)
		qput(c, "b", 0, 1)
		qtake(c, "b", 0, 2, 3, false) // lost before Ack
		c.Unlisted()
		r := c.Result()
		if r.Unaccounted != 2 || r.UnaccountedUntaken != 1 || r.Lost != 0 || r.Safety.Violations != 0 {
			t.Fatalf("an item that may still be queued counted as lost: %+v", r)
		}
	})
	t.Run("taken before the put's answer", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtMostOnce)
		c.Putting("a", 0, 0)
		qtake(c, "a", 0, 0, 1, true)
		c.Put("a", 2*ms, true, false)
		if r := c.Result(); r.Safety.Violations != 0 || r.Delivered != 1 || r.Put != 1 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("never put", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtMostOnce)
		qtake(c, "ghost", 0, 0, 1, true)
		if r := c.Result(); r.Safety.Violations != 1 {
			t.Fatalf("%+v", r)
		}
	})
	for _, d := range []recipes.Delivery{recipes.AtMostOnce, recipes.AtLeastOnce} {
		t.Run("consumer lost holding, "+string(d), func(t *testing.T) {
			c := NewQueueChecker(d)
			qput(c, "a", 0, 0)
			qtake(c, "a", 0, 1, 2, false) // lost before Ack
			if d == recipes.AtLeastOnce {
				qtake(c, "a", 1, 3, 4, true)
			}
			r := c.Result()
			if r.Safety.Violations != 0 || r.LostHolding != 1 {
				t.Fatalf("%+v", r)
			}
			if d == recipes.AtLeastOnce && (r.Redelivered != 1 || r.Delivered != 1) {
				t.Fatalf("at least once: %+v", r)
			}
			if d == recipes.AtMostOnce && r.Dropped != 1 {
				t.Fatalf("at most once: %+v", r)
			}
		})
	}
	t.Run("lost holding, at least once, not redelivered", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtLeastOnce)
		qput(c, "a", 0, 0)
		qtake(c, "a", 0, 1, 2, false)
		if r := c.Result(); r.Safety.Violations != 1 || r.Lost != 1 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		for _, d := range []recipes.Delivery{recipes.AtMostOnce, recipes.AtLeastOnce} {
			c := NewQueueChecker(d)
			qput(c, "a", 0, 0)
			qtake(c, "a", 0, 1, 2, true)
			qtake(c, "a", 1, 1, 3, true)
			if r := c.Result(); r.Safety.Violations != 1 || r.Duplicates != 1 {
				t.Fatalf("%s: %+v", d, r)
			}
		}
	})
	t.Run("uncertain take taken again", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtMostOnce)
		qput(c, "a", 0, 0)
		c.TakenUncertain("a", 0, 1*ms, 2*ms)
		qtake(c, "a", 1, 3, 4, true)
		if r := c.Result(); r.Safety.Violations != 0 || r.Retaken != 1 || r.Delivered != 1 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("uncertain take after a take", func(t *testing.T) {
		for _, d := range []recipes.Delivery{recipes.AtMostOnce, recipes.AtLeastOnce} {
			c := NewQueueChecker(d)
			qput(c, "a", 0, 0)
			qtake(c, "a", 0, 1, 2, true)
			c.TakenUncertain("a", 3, 1*ms, 3*ms)
			if r := c.Result(); r.Safety.Violations != 0 || r.Duplicates != 0 || r.Delivered != 1 {
				t.Fatalf("%s: %+v", d, r)
			}
		}
	})
	t.Run("priority inversion", func(t *testing.T) {
		c := NewQueueChecker(recipes.AtMostOnce)
		qput(c, "low", 2, 0)
		qput(c, "urgent", 0, 1)
		qtake(c, "low", 0, 5, 6, true)    // urgent waited, untouched, all along
		qtake(c, "urgent", 1, 7, 8, true) // its take began after low's ended
		qput(c, "low2", 2, 10)
		qput(c, "urgent2", 0, 11)
		qtake(c, "urgent2", 0, 15, 16, true)
		qtake(c, "low2", 1, 17, 18, true)
		// A take of low3 raced urgent3's, which ended later: only the
		// upper bound counts it.
		qput(c, "low3", 2, 20)
		qput(c, "urgent3", 0, 21)
		qtake(c, "urgent3", 0, 25, 29, true)
		qtake(c, "low3", 1, 26, 27, true)
		if r := c.Result(); r.Inversions != 1 || r.RacedInversions != 2 {
			t.Fatalf("%d inversions (raced %d), want 1 (2): %+v", r.Inversions, r.RacedInversions, r)
		}
	})
}

// TestQueueWorkload runs every variant on both backends, 4 consumers and 2
// producers at 60 items/s for 2s: nothing lost or duplicated, the figures
// recorded. (The herd is counted where it does not depend on the load:
// recipetest's IdleWakes.)
func TestQueueWorkload(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range queueSpec().VariantNames(b.Kind()) {
			cfg := results.Config{Duration: 2 * time.Second, Rate: 60, Hold: time.Millisecond,
				Params: map[string]string{ParamProducers: "2", ParamPriorities: "3", ParamItemSize: "64"}}
			if v == "native" {
				cfg.Params[ParamPriorities] = "1"
			}
			res := runRecipeCase(t, NewQueue(), b, v, 4, cfg)
			t.Logf("%s %s: ops %+v, %.2f server notifications, %.2f failed claims, %.3f inversions per item; notes %q",
				b.Kind(), v, res.Ops, res.PerOp["server_watch_events"], res.PerOp["failed_claims"], res.PerOp["priority_inversions"], res.Notes)
			if res.Safety.Violations != 0 || res.Safety.Checked == 0 {
				t.Errorf("%s: safety %+v", v, res.Safety)
			}
			// How many are taken depends on the machine's load; that
			// items flow, and that every one is accounted for, does not.
			if res.Ops.Succeeded == 0 || res.StoppedBy != StoppedByDuration || res.Ops.Issued < res.Ops.Succeeded {
				t.Errorf("%s: ops %+v, stopped by %s", v, res.Ops, res.StoppedBy)
			}
			for _, h := range []figures.Latency{"delivery", "put", "take", "ack"} {
				if res.Latency[h] == nil {
					t.Errorf("%s: no %s histogram", v, h)
				}
			}
			if _, ok := res.PerOp["failed_claims"]; ok != (v != "native") {
				t.Errorf("%s: failed claims figure present %v: want it for every variant but native, whose library counts none", v, ok)
			}
		}
	})
}

// TestQueueOpsBound: --ops ends a queue case once that many items were
// taken.
func TestQueueOpsBound(t *testing.T) {
	b := testcluster.EtcdBackend(t)
	cfg := results.Config{Duration: time.Minute, Ops: 20, Rate: 200}
	res := runRecipeCase(t, NewQueue(), b, "fair", 3, cfg)
	if res.StoppedBy != StoppedByOps || res.Ops.Succeeded < 20 || res.Safety.Violations != 0 {
		t.Fatalf("ops %+v, stopped by %s, safety %+v", res.Ops, res.StoppedBy, res.Safety)
	}
}
