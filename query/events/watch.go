package events

import (
	"context"
	"sync"
	"time"
)

// Watcher wakes readers waiting for the feed to grow past a position.
// While any waits, it reads the newest position every Every (one read
// for all of them, however many), and at once when Notify is called (the
// store's hook after a commit that wrote events, on the replica that
// wrote them).
type Watcher struct {
	last  func(context.Context) (int64, error)
	every time.Duration

	mu      sync.Mutex
	cur     int64
	changed chan struct{} // closed when cur grows
	waiters int
	polling bool // a poll goroutine runs
	poke    chan struct{}
}

// NewWatcher returns a Watcher reading the newest position with last,
// every interval while any reader waits.
func NewWatcher(last func(context.Context) (int64, error), every time.Duration) *Watcher {
	return &Watcher{last: last, every: every, changed: make(chan struct{}), poke: make(chan struct{}, 1)}
}

// Notify tells the watcher that the feed may have grown.
func (w *Watcher) Notify() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// Last returns the newest position the watcher has read.
func (w *Watcher) Last() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// Wait returns when the feed's newest position is past after, or when
// ctx ends (its error).
func (w *Watcher) Wait(ctx context.Context, after int64) error {
	w.mu.Lock()
	if w.cur > after {
		w.mu.Unlock()
		return nil
	}
	w.waiters++
	if !w.polling {
		w.polling = true
		go w.poll()
	}
	defer func() {
		w.mu.Lock()
		w.waiters--
		w.mu.Unlock()
	}()
	for {
		if w.cur > after {
			w.mu.Unlock()
			return nil
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
}

// poll reads the newest position while anyone waits.
func (w *Watcher) poll() {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last, err := w.last(ctx)
		cancel()
		w.mu.Lock()
		if err == nil && last > w.cur {
			w.cur = last
			close(w.changed)
			w.changed = make(chan struct{})
		}
		if w.waiters == 0 {
			w.polling = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		select {
		case <-t.C:
		case <-w.poke:
		}
	}
}
