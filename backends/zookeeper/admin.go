package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// ErrOutsideNamespace: DeleteTree was asked to remove a path outside
// zkbench's namespace (see backends.InNamespace).
var ErrOutsideNamespace = errors.New("zookeeper: refusing to delete outside " + backends.Root + "/<run-id>")

// deleteParallelism bounds the deletes in flight on the admin connection.
const deleteParallelism = 32

// adminSession returns the backend's admin session, opening it on first use
// with a 16 MiB receive buffer so that huge folders can be listed.
func (b *Backend) adminSession(ctx context.Context) (*Session, error) {
	b.mu.Lock()
	s := b.admin
	b.mu.Unlock()
	if s != nil && !s.isOver() {
		return s, nil
	}
	l, err := b.openLink(ctx, adminRecvBufferSize)
	if err != nil {
		return nil, err
	}
	s = newSession(l, false)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		go s.Close()
		return nil, ErrClosed
	}
	if b.admin != nil && !b.admin.isOver() {
		go s.Close() // lost a race with another caller
		return b.admin, nil
	}
	b.admin = s
	return s, nil
}

// List returns the names of p's children, sorted as Children sorts them.
// It is empty if p does not exist.
func (b *Backend) List(ctx context.Context, p string) ([]string, error) {
	s, err := b.adminSession(ctx)
	if err != nil {
		return nil, err
	}
	kids, err := s.Children(ctx, p)
	if errors.Is(err, backends.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, len(kids))
	for i, k := range kids {
		names[i] = k.Name
	}
	return names, nil
}

// DeleteTree removes p and everything below it, children before parents,
// with up to 32 deletes in flight. Nodes that vanish meanwhile (ephemerals
// of ending sessions) are fine; a node that gains a child meanwhile is
// listed again. p must be inside the namespace (ErrOutsideNamespace). A
// missing p is not an error.
func (b *Backend) DeleteTree(ctx context.Context, p string) error {
	if !backends.InNamespace(p) {
		return fmt.Errorf("%w: %q", ErrOutsideNamespace, p)
	}
	s, err := b.adminSession(ctx)
	if err != nil {
		return err
	}
	sem := make(chan struct{}, deleteParallelism)
	return s.deleteTree(ctx, p, sem)
}

// deleteTree deletes p's subtree. It tries the delete first, so a leaf
// costs one request; a node with children is listed, its children deleted
// in parallel, and the delete tried again. sem bounds the deletes in
// flight; no slot is held while waiting for children, so it cannot
// deadlock.
func (s *Session) deleteTree(ctx context.Context, p string, sem chan struct{}) error {
	for attempt := 0; ; attempt++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("zookeeper: delete %s: %w", p, ctx.Err())
		}
		err := s.Delete(ctx, p)
		<-sem
		switch {
		case err == nil, errors.Is(err, backends.ErrNoNode):
			return nil
		case errors.Is(err, backends.ErrUnknownOutcome):
			continue // try again: gone (ErrNoNode), or still there
		case !errors.Is(err, zk.ErrNotEmpty) || attempt >= 10:
			return err
		}
		kids, err := s.Children(ctx, p)
		if errors.Is(err, backends.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for _, k := range kids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.deleteTree(ctx, k.Path, sem); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
}
