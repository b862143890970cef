package query

// The loop: leadership, pacing and backoff, and what one step does.

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Run fetches while this process holds the chain's lease (see
// fetch_lease.go), one step after another while behind, every Interval
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
		case errors.Is(err, ErrLeaseLost):
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

func (f *Fetcher) fetch(ctx context.Context) (bool, error) {
	chain := f.cfg.Chain
	if err := f.CheckChain(ctx); err != nil {
		return false, err
	}
	f.resetHeads()
	if err := f.probe(ctx); err != nil {
		return false, err
	}
	f.ready.Store(true)
	tracked, err := f.cfg.Store.Tracked(ctx, chain)
	if err != nil {
		return false, err
	}
	f.metrics.tracked.Set(float64(len(tracked)))
	// The head follower follows the synced addresses, and those it syncs
	// in this step: an address is followed from its sync, the backfill
	// covers it up to there.
	set := make(map[string]bool, len(tracked))
	var fresh []Tracked
	for _, t := range tracked {
		switch {
		case !t.NeedsSync:
			set[t.Address] = true
		case len(fresh) < f.cfg.SyncBatch:
			fresh = append(fresh, t)
		}
	}
	head, err := f.cfg.Source.Head(ctx)
	if err != nil {
		return false, f.nodeErr(err)
	}
	f.metrics.head.Set(float64(head))
	f.setHead(head)
	if head < f.cfg.Confirmations {
		return false, nil
	}
	target := head - f.cfg.Confirmations
	f.target = target

	cp, ok, err := f.cfg.Store.Checkpoint(ctx, chain)
	if err != nil {
		return false, err
	}
	if !ok {
		// A new database starts at the confirmed head: the past is the
		// backfill's, for the addresses that want it.
		if cp, err = f.storeFirst(ctx, target, set); err != nil {
			return false, err
		}
	}
	if len(fresh) > 0 {
		synced, err := f.sync(ctx, fresh, cp)
		if err != nil {
			return false, err
		}
		for _, t := range synced {
			set[t.Address] = true
		}
	}
	if err := f.takeLearned(ctx, cp); err != nil {
		return false, err
	}
	if cp.Number >= target {
		f.setCaughtUp(true, cp)
		return false, f.refreshStep(ctx, tracked)
	}
	end := min(target, cp.Number+uint64(f.cfg.Batch))
	n, err := f.storeBlocks(ctx, cp, end, set)
	if err != nil {
		return false, err
	}
	// Within a batch of the node's head counts as caught up for the lag
	// check: on a chain with blocks faster than steps, every step stores
	// a few, and a node that stops producing must still show.
	f.setCaughtUp(cp.Number+uint64(n)+uint64(f.cfg.Batch) >= target, Block{})
	// The scheduled refresh runs whatever the cadence: on a fast chain a
	// step nearly always has new blocks to store.
	if err := f.refreshStep(ctx, tracked); err != nil {
		return false, err
	}
	return cp.Number+uint64(n) < target, nil
}
