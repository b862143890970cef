package site

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestLimiterBounded: a flood of keys never grows the table past its
// bound; the bucket used least recently goes first.
func TestLimiterBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l := newLimiter(1, 1, 1000, func() time.Time { return now })
	if ok, _ := l.allow("kept"); !ok {
		t.Fatal("first request refused")
	}
	for i := range 5000 {
		l.allow(fmt.Sprint("flood-", i))
		if i%100 == 0 {
			l.allow("kept") // used recently: stays, and stays empty
		}
	}
	if n := l.size(); n != 1000 {
		t.Errorf("%d buckets after 5,000 keys, want the bound 1000", n)
	}
	if ok, _ := l.allow("kept"); ok {
		t.Error("the recently used bucket was dropped (its token is back)")
	}
	if ok, _ := l.allow("flood-0"); !ok {
		t.Error("the least recently used bucket was kept")
	}
}

// BenchmarkLimiter measures allow with 1,000 client addresses (the
// reference), then 24,000 and 1,000,000 (a flood past the table's bound),
// and the sweeping table this one replaced (swept whole on every new
// address once it held 10,000 fresh ones) at 24,000. Divide each ns/op by
// the reference's.
func BenchmarkLimiter(b *testing.B) {
	type allower interface {
		allow(string) (bool, time.Duration)
	}
	now := time.Now()
	clock := func() time.Time { return now }
	for _, bc := range []struct {
		name string
		n    int
		make func() allower
	}{
		{"lru/addrs=1000", 1_000, func() allower { return newLimiter(rate.Limit(1e9), 1e9, 0, clock) }},
		{"lru/addrs=24000", 24_000, func() allower { return newLimiter(rate.Limit(1e9), 1e9, 0, clock) }},
		{"lru/addrs=1000000", 1_000_000, func() allower { return newLimiter(rate.Limit(1e9), 1e9, 0, clock) }},
		{"sweep/addrs=24000", 24_000, func() allower {
			return &sweepLimiter{limit: rate.Limit(1e9), burst: 1e9, now: clock, buckets: map[string]*sweepBucket{}}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			keys := make([]string, bc.n)
			for i := range keys {
				keys[i] = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String()
			}
			l := bc.make()
			for i := 0; b.Loop(); i++ {
				l.allow(keys[i%bc.n])
			}
		})
	}
}

// sweepLimiter is the limiter before the bound, kept as the benchmark's
// comparison: idle buckets are swept once the map holds 10,000, which
// frees nothing while they are all fresh.
type sweepLimiter struct {
	limit   rate.Limit
	burst   int
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*sweepBucket
}

type sweepBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func (l *sweepLimiter) allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= 10000 {
			for k, b := range l.buckets {
				if now.Sub(b.seen) > 10*time.Minute {
					delete(l.buckets, k)
				}
			}
		}
		b = &sweepBucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	return b.lim.AllowN(now, 1), 0
}
