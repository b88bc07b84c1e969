package recipetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// barrierEnv is one barrier subtest's backend, namespace and variant.
type barrierEnv struct {
	t     *testing.T
	b     backends.Backend
	admin backends.Admin
	v     variants.Variant[recipes.DoubleBarrierFactory]
	path  string // base: rounds live at <path>/round-<r>
}

// newParticipants opens n sessions, counted by instrument, closed when the
// test ends.
func (e *barrierEnv) newParticipants(n int) []*member {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	ms := make([]*member, n)
	for i := range ms {
		raw, err := e.b.NewSession(ctx)
		if err != nil {
			e.t.Fatalf("NewSession: %v", err)
		}
		e.t.Cleanup(func() { _ = raw.Close() })
		c := &instrument.Counters{}
		ms[i] = &member{id: fmt.Sprintf("p%d", i), raw: raw, s: instrument.Wrap(raw, c), c: c}
	}
	return ms
}

func (e *barrierEnv) round(r int) string { return fmt.Sprintf("%s/round-%d", e.path, r) }

// list returns p's children as Admin sees them (none if p does not exist).
func (e *barrierEnv) list(p string) []string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	names, err := e.admin.List(ctx, p)
	if err != nil && !errors.Is(err, backends.ErrNoNode) {
		e.t.Fatalf("List %s: %v", p, err)
	}
	return names
}

// listBecomes waits until p has exactly n children.
func (e *barrierEnv) listBecomes(p string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(settleBound)
	for {
		names := e.list(p)
		if len(names) == n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("after %v: %s holds %q, want %d children", settleBound, p, names, n)
		}
		time.Sleep(pollEvery)
	}
}

// phase is a background Enter or Leave.
type phase struct {
	done  chan struct{}
	p     recipes.Passage
	err   error
	start time.Time
	end   time.Time
}

func startPhase(ctx context.Context, f func(context.Context) (recipes.Passage, error)) *phase {
	ph := &phase{done: make(chan struct{}), start: time.Now()}
	go func() {
		defer close(ph.done)
		ph.p, ph.err = f(ctx)
		ph.end = time.Now()
	}()
	return ph
}

func (ph *phase) finished() bool {
	select {
	case <-ph.done:
		return true
	default:
		return false
	}
}

// waitAll waits for every phase and fails on an error.
func (e *barrierEnv) waitAll(what string, phs []*phase) {
	e.t.Helper()
	deadline := time.After(opTimeout)
	for i, ph := range phs {
		select {
		case <-ph.done:
		case <-deadline:
			e.t.Fatalf("%s of participant %d did not return within %v", what, i, opTimeout)
		}
		if ph.err != nil {
			e.t.Fatalf("%s of participant %d: %v", what, i, ph.err)
		}
	}
}

// crossing counts, per round, participants that started a phase, and
// records any that finished it before all N had started.
type crossing struct {
	mu         sync.Mutex
	started    map[string]int
	violations []string
}

func (c *crossing) begin(key string) {
	c.mu.Lock()
	if c.started == nil {
		c.started = map[string]int{}
	}
	c.started[key]++
	c.mu.Unlock()
}

// passed checks, when a participant finished phase key, that n had begun.
func (c *crossing) passed(key, who string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if got := c.started[key]; got < n {
		c.violations = append(c.violations, fmt.Sprintf("%s passed %s with %d of %d started", who, key, got, n))
	}
}
