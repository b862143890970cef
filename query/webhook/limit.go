package webhook

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
)

// limiters bound the deliveries of each requester (all its endpoints).
type limiters struct {
	rate  float64
	burst int
	mu    sync.Mutex
	m     map[int64]*rate.Limiter
}

// wait waits for account's next delivery; at once when unlimited.
func (l *limiters) wait(ctx context.Context, account int64) error {
	if l.rate <= 0 {
		return nil
	}
	l.mu.Lock()
	lim := l.m[account]
	if lim == nil {
		lim = rate.NewLimiter(rate.Limit(l.rate), l.burst)
		l.m[account] = lim
	}
	l.mu.Unlock()
	return lim.Wait(ctx)
}
