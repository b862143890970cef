package site

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps a token bucket per key (a client address group, a
// credential) in a table of at most max buckets: when it is full, the
// bucket used least recently is dropped (its key starts again with a full
// bucket, the lenient side). Finding, adding and dropping a bucket take
// constant time, however many keys a flood brings.
type limiter struct {
	limit rate.Limit
	burst int
	max   int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*list.Element // of *bucket
	lru     list.List                // front: used most recently
}

type bucket struct {
	key string
	lim *rate.Limiter
}

// defaultLimiterMax bounds each table: 100,000 buckets are about 20 MB.
const defaultLimiterMax = 100_000

func newLimiter(limit rate.Limit, burst, max int, now func() time.Time) *limiter {
	if limit <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	if max < 1 {
		max = defaultLimiterMax
	}
	return &limiter{limit: limit, burst: burst, max: max, now: now, buckets: map[string]*list.Element{}}
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
	var b *bucket
	if e, ok := l.buckets[key]; ok {
		l.lru.MoveToFront(e)
		b = e.Value.(*bucket)
	} else {
		if l.lru.Len() >= l.max {
			oldest := l.lru.Back()
			l.lru.Remove(oldest)
			delete(l.buckets, oldest.Value.(*bucket).key)
		}
		b = &bucket{key: key, lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = l.lru.PushFront(b)
	}
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	r := b.lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait
}

// size is the number of buckets kept.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}
