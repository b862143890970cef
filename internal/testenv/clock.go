package testenv

import (
	"sync"
	"testing"
	"time"
)

// Clock is a settable clock for tests: Now returns what it was set to,
// Advance moves it, and After's channels fire when Advance moves it past
// their time, never by themselves. A test can also see the waits asked of
// it (NextAfter), to decide when each ends. It is safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []timer
	waits   []time.Duration // every After's d, in order
	seen    int             // waits NextAfter has returned or passed over
	changed chan struct{}   // closed and replaced at each After
}

type timer struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{now: t, changed: make(chan struct{})} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d (back when d is negative) and fires the
// channels of After whose time it reached.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now // buffered, fired once
	}
	c.timers = kept
}

// After returns a channel that receives the clock's time once Advance has
// moved it d past now (at once for d <= 0).
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
	} else {
		c.timers = append(c.timers, timer{at: c.now.Add(d), ch: ch})
	}
	c.waits = append(c.waits, d)
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// NextAfter waits for the next call of After with a duration of at most
// most (longer ones, such as a schedule's, are passed over) and returns
// its duration; it fails tb after 30 s without one.
func (c *Clock) NextAfter(tb testing.TB, most time.Duration) time.Duration {
	tb.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		for c.seen < len(c.waits) {
			d := c.waits[c.seen]
			c.seen++
			if d <= most {
				c.mu.Unlock()
				return d
			}
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			tb.Fatalf("testenv.Clock: no wait of at most %s asked in 30 s", most)
			return 0
		}
	}
}

// AutoAdvance ends every wait of at most most as soon as it is asked (a
// goroutine advances the clock by it), until tb ends, and returns a
// function that lists the waits it ended so far: a clock for a worker that
// must not wait while a test counts its waits (NextAfter still returns
// each). Longer waits (a schedule's) never end.
func (c *Clock) AutoAdvance(tb testing.TB, most time.Duration) (waits func() []time.Duration) {
	var (
		mu    sync.Mutex
		ended []time.Duration
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	tb.Cleanup(func() { close(stop); <-done })
	c.mu.Lock()
	next := len(c.waits) // its own cursor: NextAfter still sees every wait
	c.mu.Unlock()
	go func() {
		defer close(done)
		for {
			c.mu.Lock()
			if c.changed == nil {
				c.changed = make(chan struct{})
			}
			var due []time.Duration
			for ; next < len(c.waits); next++ {
				if d := c.waits[next]; d <= most {
					due = append(due, d)
				}
			}
			changed := c.changed
			c.mu.Unlock()
			mu.Lock()
			ended = append(ended, due...) // before the waits end: a test reads it then
			mu.Unlock()
			for _, d := range due {
				c.Advance(d)
			}
			select {
			case <-changed:
			case <-stop:
				return
			}
		}
	}()
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), ended...)
	}
}
