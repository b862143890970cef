package fetch

// The loop: electing a leader, pacing and backoff, and the step.

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
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		l, held, err := f.cfg.Store.AcquireLease(ctx, f.cfg.Chain, f.cfg.Holder, f.cfg.LeaseTTL)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			backoff = f.backoff(backoff)
			f.log.Warn("fetcher: electing a leader", "err", err, "retry", backoff)
			f.wait(ctx, backoff)
		case !held:
			backoff = 0
			f.wait(ctx, f.cfg.LeaseTTL/5)
		default:
			backoff = 0
			f.lead(ctx, l)
		}
	}
	return nil
}

// loop runs steps until lead ends, and beside them the backfills and the
// reads of the scheduled refresh.
func (f *Fetcher) loop(lead context.Context) {
	var wg sync.WaitGroup
	workers, stop := context.WithCancel(lead)
	f.refreshAsync = true
	wg.Go(func() { f.backfillLoop(workers) })
	wg.Go(func() { f.refreshLoop(workers) })
	defer func() {
		stop()
		wg.Wait()
		f.refreshAsync = false // FetchOnce alone refreshes inline again
	}()
	backoff := time.Duration(0)
	for lead.Err() == nil {
		more, err := f.step(lead)
		var wait time.Duration
		switch {
		case err != nil && lead.Err() != nil:
			return
		case errors.Is(err, query.ErrLeaseLost):
			f.log.Warn("fetcher: write refused: the lease is lost", "err", err)
			return
		case err != nil:
			backoff = f.backoff(backoff)
			wait = backoff
			f.log.Warn("fetcher: step failed", "err", err, "retry", wait)
		case more:
			backoff = 0
		default:
			backoff = 0
			wait = f.cfg.Interval
		}
		if wait > 0 {
			f.wait(lead, wait)
		}
	}
}

func (f *Fetcher) backoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return f.cfg.Interval
	}
	return min(2*prev, f.cfg.MaxBackoff)
}

func (f *Fetcher) wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-f.cfg.Clock.After(d):
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
	if _, err := f.step(ctx); err != nil {
		return err
	}
	for {
		more, err := f.backfillStep(ctx)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	cp, ok, err := f.cfg.Store.Checkpoint(ctx, f.cfg.Chain)
	if err != nil || !ok {
		return err
	}
	return f.takeLearned(ctx, cp)
}

// step is FetchOnce; more reports that blocks remain to be fetched.
func (f *Fetcher) step(ctx context.Context) (more bool, err error) {
	more, err = f.fetch(ctx)
	f.record(err)
	if err == nil {
		f.wakeBackfills()
	}
	return more, err
}
