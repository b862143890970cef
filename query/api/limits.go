package api

// Limits: failed authentications per client address and per API id,
// requests per API key, and requests at once per API key (keyCounts). Each is a token bucket (golang.org/x/time/rate)
// per key, kept in memory; a bucket that has refilled carries no
// information and is dropped.

import (
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a token bucket: Rate events a second on average, in bursts of
// up to Burst. The zero Limit is no limit.
type Limit struct {
	Rate  float64
	Burst int
}

// Enabled reports whether l limits anything.
func (l Limit) Enabled() bool { return l.Rate > 0 && l.Burst > 0 }

// Default limits of failed authentications: a client address (an IPv6
// /64) may fail 10 times, then once every 6 seconds; an API id 20 times,
// then once every 3 seconds, whoever tries.
var (
	DefaultAuthFailuresPerClient = Limit{Rate: 1.0 / 6, Burst: 10}
	DefaultAuthFailuresPerKey    = Limit{Rate: 1.0 / 3, Burst: 20}
)

// maxBuckets bounds each table of buckets. A full table first drops the
// buckets that have refilled; keys beyond it are not limited until some
// have, so a flood of fresh keys costs memory up to the bound, no more.
const maxBuckets = 100_000

// buckets is a token bucket per key.
type buckets[K comparable] struct {
	limit Limit
	mu    sync.Mutex
	m     map[K]*rate.Limiter
	swept time.Time
}

func newBuckets[K comparable](l Limit) *buckets[K] {
	return &buckets[K]{limit: l, m: make(map[K]*rate.Limiter)}
}

// wait is how long k must wait for a token at now; 0 when it has one or
// is not limited. It takes nothing.
func (b *buckets[K]) wait(k K, now time.Time) time.Duration {
	if b == nil || !b.limit.Enabled() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lim := b.m[k]
	if lim == nil {
		return 0
	}
	return waitFor(lim, now)
}

// take takes a token for k at now; when there is none, it returns how
// long k must wait for one.
func (b *buckets[K]) take(k K, now time.Time) time.Duration {
	if b == nil || !b.limit.Enabled() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lim := b.m[k]
	if lim == nil {
		if len(b.m) >= maxBuckets || now.Sub(b.swept) > time.Minute {
			b.sweep(now)
		}
		if len(b.m) >= maxBuckets {
			return 0
		}
		lim = rate.NewLimiter(rate.Limit(b.limit.Rate), b.limit.Burst)
		b.m[k] = lim
	}
	if lim.AllowN(now, 1) {
		return 0
	}
	return waitFor(lim, now)
}

// sweep drops the buckets that have refilled.
func (b *buckets[K]) sweep(now time.Time) {
	b.swept = now
	for k, lim := range b.m {
		if lim.TokensAt(now) >= float64(lim.Burst()) {
			delete(b.m, k)
		}
	}
}

// waitFor is how long until lim has a whole token at now.
func waitFor(lim *rate.Limiter, now time.Time) time.Duration {
	t := lim.TokensAt(now)
	if t >= 1 {
		return 0
	}
	return time.Duration((1 - t) / float64(lim.Limit()) * float64(time.Second))
}

// retryAfter is a Retry-After value: whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// tooMany is the 429 answer to a limit reached, with the wait for the
// Retry-After header.
func tooMany(wait time.Duration, format string, args ...any) *Error {
	e := errorf(codeResourceExhausted, format, args...)
	e.Message += "; retry in " + retryAfter(wait) + " s"
	e.RetryAfter = wait
	return e
}

// orDefault is l, or def when l is zero; a negative rate is no limit.
func orDefault(l, def Limit) Limit {
	switch {
	case l == Limit{}:
		return def
	case l.Rate < 0:
		return Limit{}
	}
	return l
}

// keyCounts counts each API key's requests at once, up to limit.
type keyCounts struct {
	limit int
	mu    sync.Mutex
	n     map[string]int
}

// enter counts a request of key; false, counting nothing, when key has
// limit already.
func (c *keyCounts) enter(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] >= c.limit {
		return false
	}
	c.n[key]++
	return true
}

// leave ends a request of key that entered.
func (c *keyCounts) leave(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key]--; c.n[key] <= 0 {
		delete(c.n, key)
	}
}
