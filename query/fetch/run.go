package fetch

// The loop: electing a leader, the workers while leading, pacing and
// backoff, and FetchOnce, which runs the workers' steps one after another.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/wharfhq/wharf/query"
)

// Run fetches while this process holds the chain's lease (see
// lead.go), one step after another while behind, every Interval
// once caught up, with exponential backoff after errors, until ctx ends.
// It returns nil when ctx ends.
func (f *Fetcher) Run(ctx context.Context) error {
	c := f.core
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		l, held, err := c.cfg.Store.AcquireLease(ctx, c.cfg.Chain, c.cfg.Holder, c.cfg.LeaseTTL)
		if ctx.Err() == nil {
			c.recordLease(err)
		}
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			backoff = c.backoff(backoff)
			c.log.Warn("fetcher: electing a leader", "err", err, "retry", backoff)
			c.wait(ctx, backoff)
		case !held:
			backoff = 0
			c.wait(ctx, c.cfg.LeaseTTL/5)
		default:
			backoff = 0
			f.lead(ctx, l)
		}
	}
	return nil
}

// loop runs the head follower's steps in this goroutine until lead ends,
// and beside them, once the follower has settled the chain's facts (the
// chain ID, the trace API), the backfiller and the refresher, each in a
// goroutine of its own with its own state.
func (f *Fetcher) loop(lead context.Context) {
	var wg sync.WaitGroup
	workers, stop := context.WithCancel(lead)
	started := false
	// The refresher reads the scheduled refresh from the first step on,
	// in its goroutine: the follower only takes what it read.
	f.follow.inlineRefresh = nil
	defer func() {
		stop()
		wg.Wait()
		f.follow.inlineRefresh = f.refresh // FetchOnce alone refreshes inline again
	}()
	backoff := time.Duration(0)
	for lead.Err() == nil {
		more, err := f.follow.step(lead)
		if facts, ok := f.follow.settled(); ok && !started {
			started = true
			wg.Go(func() { f.back.run(workers, facts) })
			wg.Go(func() { f.refresh.run(workers, facts) })
		}
		var wait time.Duration
		switch {
		case err != nil && lead.Err() != nil:
			return
		case errors.Is(err, query.ErrLeaseLost):
			f.core.log.Warn("fetcher: write refused: the lease is lost", "err", err)
			return
		case err != nil:
			backoff = f.core.backoff(backoff)
			wait = backoff
			f.core.log.Warn("fetcher: step failed", "err", err, "retry", wait)
		case more:
			backoff = 0
		default:
			backoff = 0
			wait = f.core.cfg.Interval
		}
		if wait > 0 {
			f.core.wait(lead, wait)
		}
	}
}

func (c *core) backoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return c.cfg.Interval
	}
	return min(2*prev, c.cfg.MaxBackoff)
}

func (c *core) wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-c.cfg.Clock.After(d):
	}
}

// FetchOnce does one step: syncs new subscriptions (balances at once, then
// a backfill), stores up to Batch new blocks with enough confirmations
// (handling a reorg if the chain changed under the checkpoint), and
// refreshes a share of the balances when they are due. Errors wrap
// ErrUnavailable when the node or the database cannot be reached; Health
// reports them until a step succeeds.
//
// Then it runs the pending backfills to their end, which Run does beside
// the steps instead.
func (f *Fetcher) FetchOnce(ctx context.Context) error {
	if _, err := f.follow.step(ctx); err != nil {
		return err
	}
	facts, ok := f.follow.settled()
	if !ok {
		return nil // unreachable: a step that succeeded settled them
	}
	for {
		more, err := f.back.step(ctx, facts)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	cp, ok, err := f.core.cfg.Store.Checkpoint(ctx, f.core.cfg.Chain)
	if err != nil || !ok {
		return err
	}
	return f.follow.takeLearned(ctx, cp)
}
