package fetch

// The hand-offs between workers: values one worker makes for another.

import (
	"sync"

	"github.com/wharfhq/wharf/query"
)

// handoff passes values from one worker to another: the sender puts them
// without waiting, the receiver takes all that wait, in order. It is the
// only state two workers share that is not read-only; its lock says so.
// A value put belongs to the receiver.
type handoff[T any] struct {
	mu    sync.Mutex
	items []T
}

// put queues v for the receiver.
func (h *handoff[T]) put(v ...T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(h.items, v...)
}

// take returns the values waiting, oldest first, and empties the queue.
func (h *handoff[T]) take() []T {
	h.mu.Lock()
	defer h.mu.Unlock()
	items := h.items
	h.items = nil
	return items
}

// putBack queues again values taken and not used, before any put since.
func (h *handoff[T]) putBack(v []T) {
	if len(v) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(v[:len(v):len(v)], h.items...)
}

// learnedTokens are the tokens a backfill found an address moving, for
// the head follower to read its balances of (the backfiller's hand-off).
type learnedTokens struct {
	address   string
	contracts []string
	// ended says that the address's backfill ended with these.
	ended bool
}

// refreshed is a slice of balances the refresher read, with the stored
// block they are compared at (the refresher's hand-off).
type refreshed struct {
	balances []query.Balance
	at       query.Block
}
