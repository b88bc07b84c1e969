package recipetest

import (
	"context"
	"errors"
	"time"

	"github.com/zkbench/zkbench/recipes"
)

// testWaiterSessionLost: a waiter whose session ends stops waiting with an
// error matching recipes.ErrLockLost, never acquires, and leaves no node.
func testWaiterSessionLost(e *lockEnv) {
	q := e.holderAndWaiter()
	holder, waiter, p, holderNodes := q.holder, q.waiter, q.p, q.nodes
	if err := waiter.s.Close(); err != nil {
		e.t.Fatalf("closing the waiter's session: %v", err)
	}
	e.wait(p, promptBound, "after its session closed")
	if !errors.Is(p.err, recipes.ErrLockLost) {
		e.t.Fatalf("Acquire on a closed session returned %v, want ErrLockLost", p.err)
	}
	e.childrenBecome(holderNodes)

	// The holder is unharmed and the lock still works.
	e.release(holder)
	e.childrenBecome(0)
	other := e.newClient()
	e.acquire(other)
	e.release(other)
	e.childrenBecome(0)
}

// testHolderSessionLost: the holder's session ending closes Grant.Lost, lets
// the next waiter in with a larger token, and makes the old holder's Release
// return ErrLockLost.
func testHolderSessionLost(e *lockEnv) {
	q := e.holderAndWaiter()
	holder, waiter, p, held := q.holder, q.waiter, q.p, q.held
	if err := holder.s.Close(); err != nil {
		e.t.Fatalf("closing the holder's session: %v", err)
	}
	select {
	case <-held.Lost:
	case <-time.After(promptBound):
		e.t.Errorf("Grant.Lost still open %v after the holder's session closed", promptBound)
	}
	e.granted(p, "after the holder's session closed", "waiter behind a lost holder")
	if p.grant.Token <= held.Token {
		e.t.Errorf("next token %d not above the lost holder's %d", p.grant.Token, held.Token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), promptBound)
	defer cancel()
	if err := holder.lock.Release(ctx); !errors.Is(err, recipes.ErrLockLost) {
		e.t.Errorf("Release after the session closed: %v, want ErrLockLost", err)
	}
	e.release(waiter)
	e.childrenBecome(0)
}
