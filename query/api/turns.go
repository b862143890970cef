package api

// Store turns: how many requests use the store at once, and in which
// order the waiting ones get a turn.

import (
	"context"
	"sync"
)

// turns hands out the store's turns: at most n at once, at most share
// of them to one requester (an API id). A requester that may take a
// turn when one is free takes it; the others wait, each requester's
// requests in arrival order and the requesters round-robin, so that one
// requester's many requests wait behind each other, not in front of
// another's.
type turns struct {
	mu    sync.Mutex
	free  int
	share int
	held  map[string]int       // turns held, by requester
	queue map[string][]*waiter // waiting requests, by requester, oldest first
	ring  []string             // requesters with waiting requests, next served first
}

// waiter is a request waiting for a turn; granted is closed when it has
// one.
type waiter struct {
	granted chan struct{}
	done    bool // granted (under turns.mu)
}

func newTurns(n, share int) *turns {
	return &turns{free: n, share: max(1, min(share, n)), held: make(map[string]int), queue: make(map[string][]*waiter)}
}

// take waits for a turn for who, or for ctx to end (its error).
func (t *turns) take(ctx context.Context, who string) error {
	t.mu.Lock()
	if t.free > 0 && t.held[who] < t.share && len(t.queue[who]) == 0 && !t.othersFirst(who) {
		t.grant(who)
		t.mu.Unlock()
		return nil
	}
	w := &waiter{granted: make(chan struct{})}
	if len(t.queue[who]) == 0 {
		t.ring = append(t.ring, who)
	}
	t.queue[who] = append(t.queue[who], w)
	t.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		defer t.mu.Unlock()
		if w.done { // granted as ctx ended: handed on
			t.give(who)
			return ctx.Err()
		}
		t.drop(who, w)
		return ctx.Err()
	}
}

// othersFirst reports whether a free turn is owed to another requester
// already waiting (one under its share).
func (t *turns) othersFirst(who string) bool {
	for _, r := range t.ring {
		if r != who && t.held[r] < t.share {
			return true
		}
	}
	return false
}

// release gives back a turn of who and hands it on.
func (t *turns) release(who string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.give(who)
}

func (t *turns) grant(who string) {
	t.free--
	t.held[who]++
}

// give returns a turn of who and hands the free turns on: to the
// requesters in the ring's order, skipping those at their share, each
// served going to the ring's end.
func (t *turns) give(who string) {
	t.free++
	if t.held[who]--; t.held[who] <= 0 {
		delete(t.held, who)
	}
	for i := 0; t.free > 0 && i < len(t.ring); {
		r := t.ring[i]
		if t.held[r] >= t.share {
			i++
			continue
		}
		q := t.queue[r]
		w := q[0]
		w.done = true
		close(w.granted)
		t.grant(r)
		t.ring = append(t.ring[:i], t.ring[i+1:]...)
		if len(q) == 1 {
			delete(t.queue, r)
		} else {
			t.queue[r] = q[1:]
			t.ring = append(t.ring, r)
		}
	}
}

// drop removes a waiter that gave up.
func (t *turns) drop(who string, w *waiter) {
	q := t.queue[who]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		t.queue[who] = q
		return
	}
	delete(t.queue, who)
	for i, r := range t.ring {
		if r == who {
			t.ring = append(t.ring[:i], t.ring[i+1:]...)
			break
		}
	}
}
