package site

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps a token bucket per key (a client address, a credential).
// Buckets idle for longer than limiterIdle are dropped once the map grows
// past limiterSweepAt, so a flood of addresses cannot grow it without bound.
type limiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

const (
	limiterIdle    = 10 * time.Minute
	limiterSweepAt = 10000
)

func newLimiter(limit rate.Limit, burst int, now func() time.Time) *limiter {
	if limit <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	return &limiter{limit: limit, burst: burst, now: now, buckets: map[string]*bucket{}}
}

// allow takes a token for key; when there is none it reports how long to
// wait. A nil limiter allows everything.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= limiterSweepAt {
			l.sweep(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	r := b.lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait
}

func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if now.Sub(b.seen) > limiterIdle {
			delete(l.buckets, k)
		}
	}
}
