package fetch

// The scheduled refresh beside the head follower: Run reads every tracked
// address's balances again in a worker of its own, so that the reads
// never hold up new blocks; the follower only reconciles and stores what
// the worker read.

import (
	"context"
	"time"

	"github.com/wharfhq/wharf/query"
)

// refresher is the state of the scheduled refresh. Under Run it is a
// worker of its own beside the head follower (run), which owns it; under
// FetchOnce alone the follower runs its work inline in each step. Either
// way it hands what it reads to the follower (refreshed).
type refresher struct {
	*core
	facts chainFacts // a copy, settled before the work starts
	next  time.Time  // when the next round, or the next slice of this one, is due
	out   *handoff[refreshed]

	// The round under way: its addresses (nil between rounds), how many
	// of them are read, when it started.
	addrs []string
	done  int
	start time.Time
}

// run re-reads the balances of every tracked address until ctx ends,
// waiting between the slices work reads for the next one due; after a
// failed slice it waits Interval and reads it again.
func (r *refresher) run(ctx context.Context, facts chainFacts) {
	r.facts = facts
	for ctx.Err() == nil {
		next, err := r.work(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.metrics.errors.Inc()
			r.log.Warn("fetcher: refresh failed", "err", err, "retry", r.cfg.Interval)
			next = r.cfg.Clock.Now().Add(r.cfg.Interval)
		}
		if wait := next.Sub(r.cfg.Clock.Now()); wait > 0 {
			r.wait(ctx, wait)
		}
	}
}

// work reads the slices of the scheduled refresh due by now, at least one
// once a round is due, and returns when the next is due. A round starts
// every half RefreshInterval (the first half an interval after the
// fetcher's start), reads every tracked address's balances again a slice
// of RefreshBatch at a time, and is paced over a quarter interval, so
// that every balance is read again within three quarters of the interval
// whatever the block cadence. A slice that fails is read again at the
// next call.
func (r *refresher) work(ctx context.Context) (time.Time, error) {
	now := r.cfg.Clock.Now()
	if now.Before(r.next) {
		return r.next, nil
	}
	if !r.readsBalances() {
		// Nothing to read again: a statement without balances is the
		// sum of its movements.
		r.next = now.Add(r.cfg.RefreshInterval / 2)
		return r.next, nil
	}
	if r.addrs == nil {
		tracked, err := r.cfg.Store.Tracked(ctx, r.cfg.Chain)
		if err != nil {
			return now, err
		}
		for _, t := range tracked {
			if !t.NeedsSync { // the sync reads those
				r.addrs = append(r.addrs, t.Address)
			}
		}
		if len(r.addrs) == 0 {
			r.addrs = nil
			r.next = now.Add(r.cfg.RefreshInterval / 2)
			return r.next, nil
		}
		r.done, r.start = 0, now
	}
	batch := r.cfg.RefreshBatch
	n := (len(r.addrs) + batch - 1) / batch
	gap := r.cfg.RefreshInterval / 4 / time.Duration(n)
	due := func() time.Time { return r.start.Add(time.Duration(r.done/batch) * gap) }
	for first := true; r.done < len(r.addrs) && (first || !now.Before(due())); first = false {
		if err := r.slice(ctx, r.addrs[r.done:min(len(r.addrs), r.done+batch)]); err != nil {
			return now, err
		}
		r.done += batch
	}
	if r.done >= len(r.addrs) {
		r.addrs = nil
		r.next = r.start.Add(r.cfg.RefreshInterval / 2)
	} else {
		r.next = due()
	}
	return r.next, nil
}

// slice reads the native and stored token balances of addrs at the
// stored head (at the confirmed node head when the stored one is older
// than a node keeps state for) and queues them for the follower.
func (r *refresher) slice(ctx context.Context, addrs []string) error {
	cp, ok, err := r.cfg.Store.Checkpoint(ctx, r.cfg.Chain)
	if err != nil || !ok {
		return err
	}
	at := cp.Number
	if h := r.nodeHead(); h > at+stateWindow+r.cfg.Confirmations {
		at = h - r.cfg.Confirmations
	}
	var qs []query.BalanceQuery
	for _, a := range addrs {
		stored, err := r.cfg.Store.Balances(ctx, r.cfg.Chain, a)
		if err != nil {
			return err
		}
		qs = append(qs, query.BalanceQuery{Address: a})
		for _, b := range stored {
			if query.IsToken(b.Asset) {
				qs = append(qs, query.BalanceQuery{Address: a, Contract: b.Contract})
			}
		}
	}
	bals, err := r.nodeBalances(ctx, at, qs)
	if unanswered(err) {
		return nil // no balances at that block: nothing to check there
	}
	if err != nil {
		return r.nodeErr(err)
	}
	now := r.cfg.Clock.Now()
	for i := range bals {
		bals[i].Chain, bals[i].Updated = r.cfg.Chain, now
		if bals[i].Asset == query.AssetNative {
			bals[i].Symbol, bals[i].Decimals = r.facts.native.Symbol, r.facts.native.Decimals
		}
	}
	r.out.put(refreshed{balances: bals, at: cp})
	return nil
}

// takeRefreshed reconciles the balances the refresh worker read against
// the statements and stores them: a balance read at a block the
// statement of its asset has moved past is stored (when newer than the
// stored one) but not compared.
func (f *follower) takeRefreshed(ctx context.Context) error {
	queue := f.refreshed.take()
	for i, r := range queue {
		if err := f.reconcileStored(ctx, r.balances, r.at); err != nil {
			f.refreshed.putBack(queue[i:])
			return err
		}
	}
	return nil
}

// refreshStep is the scheduled refresh's share of a step: under FetchOnce
// alone, reading the slices due (the refresher's work, inline); then
// storing what the refresher read (takeRefreshed).
func (f *follower) refreshStep(ctx context.Context) error {
	if r := f.inlineRefresh; r != nil {
		r.facts = f.facts
		if _, err := r.work(ctx); err != nil {
			return err
		}
	}
	return f.takeRefreshed(ctx)
}
