package fetch

// Health: the outcome of the last step, the node's head, and the lag check.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wharfhq/wharf/query"
)

// nodeErr counts an error of the node.
func (f *Fetcher) nodeErr(err error) error {
	if err != nil && !errors.Is(err, context.Canceled) {
		f.metrics.nodeErrors.Inc()
	}
	return err
}

// record keeps the outcome of a step for Health and the metrics.
func (f *Fetcher) record(err error) {
	now := f.cfg.Clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		f.lastOK, f.lastErr, f.failingSince = now, nil, time.Time{}
		f.metrics.lastSuccess.Set(float64(now.UnixNano()) / 1e9)
		return
	}
	f.metrics.errors.Inc()
	if f.lastErr == nil {
		f.failingSince = now
	}
	f.lastErr = err
}

// clearHealth forgets the outcome of the steps, as when this replica
// stops leading.
func (f *Fetcher) clearHealth() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastErr, f.failingSince, f.caughtUp = nil, time.Time{}, false
}

func (f *Fetcher) setCaughtUp(caughtUp bool, newest query.Block) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.caughtUp = caughtUp
	if !newest.Time.IsZero() {
		f.newest = newest.Time
	}
}

// Health reports whether fetching works: an error when the last step
// failed (the node or the database is unreachable), or when the fetcher
// is caught up with a node whose newest block is older than LagAfter.
func (f *Fetcher) Health() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lastErr != nil {
		return fmt.Errorf("fetching %s: failing since %s: %w", f.cfg.Chain, f.failingSince.UTC().Format(time.RFC3339), f.lastErr)
	}
	if f.cfg.LagAfter > 0 && f.caughtUp && !f.newest.IsZero() {
		if age := f.cfg.Clock.Now().Sub(f.newest); age > f.cfg.LagAfter {
			return fmt.Errorf("fetching %s: the node lags: its newest block is %s old", f.cfg.Chain, age.Round(time.Second))
		}
	}
	return nil
}

func (f *Fetcher) setHead(head uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.head = head
}

func (f *Fetcher) nodeHead() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head
}
