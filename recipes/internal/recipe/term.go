package recipe

import "sync"

// Term is one term of leadership: its Lost channel closes when the session
// ends or End is called, whichever comes first. One goroutine per Term waits
// for the two; it ends when either happens.
type Term struct {
	lost chan struct{}
	once sync.Once
}

// NewTerm starts a term that ends with sessionDone.
func NewTerm(sessionDone <-chan struct{}) *Term {
	t := &Term{lost: make(chan struct{})}
	go func() {
		select {
		case <-sessionDone:
			t.End()
		case <-t.lost:
		}
	}()
	return t
}

// Lost is closed when the term ends.
func (t *Term) Lost() <-chan struct{} { return t.lost }

// End ends the term: Lost is closed when End returns. Idempotent and safe
// for concurrent use.
func (t *Term) End() { t.once.Do(func() { close(t.lost) }) }
