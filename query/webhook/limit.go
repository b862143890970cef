package webhook

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
)

// limiters bound the deliveries of each requester (all its endpoints)
// in time; shares bound the workers they hold.
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

// shares counts the workers each requester's endpoints hold.
type shares struct {
	limit int
	mu    sync.Mutex
	n     map[int64]int
}

// add counts d more workers of account.
func (s *shares) add(account int64, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[account] += d; s.n[account] <= 0 {
		delete(s.n, account)
	}
}

// full lists the accounts that hold their share: none of their
// endpoints is leased until one of their runs ends.
func (s *shares) full() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for a, n := range s.n {
		if n >= s.limit {
			out = append(out, a)
		}
	}
	return out
}
