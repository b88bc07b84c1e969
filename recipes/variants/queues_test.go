package variants

import (
	"slices"
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// TestQueues: the queue table's names and what each variant promises.
func TestQueues(t *testing.T) {
	q := Queues()
	if got := q.Names(); !slices.Equal(got, []string{Fair, Handoff, Naive, Native, Recipe}) {
		t.Errorf("Queues().Names() = %v", got)
	}
	want := map[string]struct {
		delivery            recipes.Delivery
		herdFree, prios, cc bool
		zk                  bool
	}{
		Naive:   {recipes.AtMostOnce, false, true, true, true},
		Recipe:  {recipes.AtMostOnce, false, true, true, true},
		Fair:    {recipes.AtLeastOnce, true, true, true, true},
		Handoff: {recipes.AtMostOnce, true, true, true, true},
		Native:  {recipes.AtMostOnce, false, false, false, false},
	}
	for _, v := range q.All() {
		w := want[v.Name]
		if v.New.QueueFactory == nil || v.New.Delivery != w.delivery || v.HerdFree != w.herdFree ||
			v.New.Priorities != w.prios || v.ClientCounts != w.cc || v.Supports(backends.ZooKeeper) != w.zk || !v.Supports(backends.Etcd) {
			t.Errorf("queue %s: %+v", v.Name, v)
		}
	}
}
