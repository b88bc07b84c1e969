package recipetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// Sizes of the selector test.
const (
	selectorCandidates = 3
	selectorRounds     = 3 // terms per candidate
	selectorHold       = 20 * time.Millisecond
)

// testSelectorRoundRobin: N selectors with requeue take selectorRounds*N
// terms, never two at once. Round-robin variants give the terms strictly in
// turn (each candidate exactly selectorRounds, none twice in a row); the
// others only have to make progress. Every Run returns ctx's error when its
// ctx is cancelled, and nothing is left behind.
func testSelectorRoundRobin(e *electionEnv) {
	x := &leaderChecker{}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	want := selectorCandidates * selectorRounds
	var (
		mu    sync.Mutex
		terms []string
	)
	members := make([]*member, selectorCandidates)
	for i := range members {
		members[i] = e.newMember()
	}
	// The first term waits until every other candidate is queued (asleep on
	// a watch, or with its key in place where the instrument sees nothing),
	// so that the round-robin order is set from the start. In a FIFO variant
	// every later term waits until the previous leader is queued again: a
	// candidate stalled between giving up its term and queueing again (a
	// descheduled goroutine on a loaded machine) for longer than the next
	// terms would be queued behind a later candidate, an order the selector
	// did not make.
	var started atomic.Bool
	everyNodeIn := func() bool {
		names, err := e.count(e.path)
		return err == nil && len(names) >= selectorCandidates
	}
	allQueued := func(leader *member) bool {
		if !e.v.ClientCounts {
			return everyNodeIn()
		}
		for _, m := range members {
			if m != leader && m.armed() == 0 {
				return false
			}
		}
		return true
	}
	errs := make(chan error, selectorCandidates)
	var wg sync.WaitGroup
	for _, m := range members {
		sel := e.v.New.Selector(m.s, e.path, m.id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- sel.Run(ctx, func(tctx context.Context) error {
				for !started.Load() && !allQueued(m) && tctx.Err() == nil {
					time.Sleep(pollEvery)
				}
				for e.v.FIFO && started.Load() && !everyNodeIn() && tctx.Err() == nil {
					time.Sleep(pollEvery)
				}
				started.Store(true)
				x.begin(m.id, 0)
				time.Sleep(selectorHold)
				x.end(m.id)
				mu.Lock()
				terms = append(terms, m.id)
				if len(terms) == want {
					cancel()
				}
				mu.Unlock()
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			e.t.Errorf("Run returned %v, want context.Canceled", err)
		}
	}
	x.check(e.t)
	if len(terms) < want {
		e.t.Fatalf("only %d terms before the deadline, want %d: %v", len(terms), want, terms)
	}
	terms = terms[:want]
	e.t.Logf("%s terms: %v", e.v.Name, terms)
	if e.v.FIFO {
		count := map[string]int{}
		for i, id := range terms {
			count[id]++
			if i > 0 && terms[i-1] == id {
				e.t.Errorf("%s had two terms in a row: %v", id, terms)
				break
			}
		}
		for _, m := range members {
			if count[m.id] != selectorRounds {
				e.t.Errorf("%s had %d terms, want %d (round-robin): %v", m.id, count[m.id], selectorRounds, terms)
			}
		}
	}
	e.nodesBecome(0)
}

// testSelectorSessionLost: when the leading selector's session closes, its
// callback's ctx is cancelled, Run returns an error matching
// recipes.ErrLeadershipLost and backends.ErrSessionLost, and the other
// selector takes over.
func testSelectorSessionLost(e *electionEnv) {
	a, b := e.newMember(), e.newMember()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	x := &leaderChecker{}
	leading := make(chan string, 2)
	callbackDone := make(chan error, 1)
	run := func(m *member, done chan<- error) {
		sel := e.v.New.Selector(m.s, e.path, m.id)
		done <- sel.Run(ctx, func(tctx context.Context) error {
			x.begin(m.id, 0)
			leading <- m.id
			<-tctx.Done()
			x.end(m.id)
			if m == a {
				callbackDone <- tctx.Err()
			}
			return tctx.Err()
		})
	}
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	go run(a, aDone)
	if got := receive(e, leading, "a's first term"); got != a.id {
		e.t.Fatalf("first leader %s, want %s", got, a.id)
	}
	go run(b, bDone)
	time.Sleep(quietWindow)
	if err := a.raw.Close(); err != nil {
		e.t.Fatalf("closing a's session: %v", err)
	}
	if err := receive(e, callbackDone, "a's callback after its session closed"); err == nil {
		e.t.Errorf("a's callback ctx not cancelled")
	}
	err := receive(e, aDone, "a's Run after its session closed")
	if !errors.Is(err, recipes.ErrLeadershipLost) || !errors.Is(err, backends.ErrSessionLost) {
		e.t.Errorf("a's Run returned %v, want ErrLeadershipLost and ErrSessionLost", err)
	}
	if got := receive(e, leading, "b's term"); got != b.id {
		e.t.Errorf("next leader %s, want %s", got, b.id)
	}
	cancel()
	if err := receive(e, bDone, "b's Run after cancel"); !errors.Is(err, context.Canceled) {
		e.t.Errorf("b's Run returned %v, want context.Canceled", err)
	}
	x.check(e.t)
	e.nodesBecome(0)
}

// receive waits up to opTimeout for a value on ch.
func receive[T any](e *electionEnv, ch <-chan T, what string) T {
	e.t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(opTimeout):
		e.t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}
