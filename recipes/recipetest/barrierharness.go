package recipetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
	"github.com/zkbench/zkbench/recipes/variants"
)

// barrierEnv is one barrier subtest's environment and variant.
type barrierEnv struct {
	*env // rounds live at <path>/round-<r>
	v    variants.Variant[recipes.DoubleBarrierFactory]
}

// newParticipants opens n members, p0 to p<n-1>.
func (e *barrierEnv) newParticipants(n int) []*member {
	e.t.Helper()
	return e.newMembers("p", n)
}

func (e *barrierEnv) round(r int) string { return fmt.Sprintf("%s/round-%d", e.path, r) }

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

func (ph *phase) finished() bool { return recipe.Closed(ph.done) }

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

// cross runs participant who's phase what (Enter or Leave) of round r after
// a random delay: it notes that who began, runs step, and checks that who
// passed only once every participant had begun.
func (c *crossing) cross(ctx context.Context, who string, r int, what string,
	step func(context.Context) (recipes.Passage, error)) error {
	key := fmt.Sprintf("%s-%d", strings.ToLower(what), r)
	time.Sleep(rand.N(30 * time.Millisecond))
	c.begin(key)
	if _, err := step(ctx); err != nil {
		return fmt.Errorf("%s round %d: %s: %w", who, r, what, err)
	}
	c.passed(key, who, barrierParticipants)
	return nil
}
