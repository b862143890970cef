package fetch

// The scheduled refresh beside the head follower: Run reads every tracked
// address's balances again in a worker of its own, so that the reads
// never hold up new blocks; the follower only reconciles and stores what
// the worker read.

import (
	"context"
	"slices"
	"time"

	"github.com/wharfhq/wharf/query"
)

// refresher is the state of the scheduled refresh's worker, which Run
// starts beside the head follower and which owns it; it hands what it
// reads to the follower (refreshed).
type refresher struct {
	*core
	facts chainFacts // a copy, settled before the worker starts
	next  time.Time  // when the first round starts
	out   *handoff[refreshed]
}

// run re-reads the balances of every tracked address until ctx
// ends: a round starts every half RefreshInterval (the first half an
// interval after the fetcher's start) and is paced over a quarter
// interval, a slice of RefreshBatch addresses at a time, so that every
// balance is read again within three quarters of the interval whatever
// the block cadence. The next step of the follower takes the slices
// (takeRefreshed).
func (r *refresher) run(ctx context.Context, facts chainFacts) {
	r.facts = facts
	next := r.next
	for ctx.Err() == nil {
		if wait := next.Sub(r.cfg.Clock.Now()); wait > 0 {
			r.wait(ctx, wait)
			continue
		}
		start := r.cfg.Clock.Now()
		if err := r.round(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.metrics.errors.Inc()
			r.log.Warn("fetcher: refresh failed", "err", err, "retry", r.cfg.Interval)
			next = r.cfg.Clock.Now().Add(r.cfg.Interval)
			continue
		}
		next = start.Add(r.cfg.RefreshInterval / 2)
	}
}

// round reads every tracked address's balances once, a slice at a
// time, the slices spread over a quarter RefreshInterval.
func (r *refresher) round(ctx context.Context) error {
	tracked, err := r.cfg.Store.Tracked(ctx, r.cfg.Chain)
	if err != nil {
		return err
	}
	var addrs []string
	for _, t := range tracked {
		if !t.NeedsSync { // the sync reads those
			addrs = append(addrs, t.Address)
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	batch := r.cfg.RefreshBatch
	slices := (len(addrs) + batch - 1) / batch
	gap := r.cfg.RefreshInterval / 4 / time.Duration(slices)
	for i := 0; i < len(addrs); i += batch {
		due := r.cfg.Clock.Now().Add(gap)
		if err := r.slice(ctx, addrs[i:min(len(addrs), i+batch)]); err != nil {
			return err
		}
		if wait := due.Sub(r.cfg.Clock.Now()); wait > 0 && i+batch < len(addrs) {
			r.wait(ctx, wait)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
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
	bals, err := r.cfg.Source.Balances(ctx, at, qs)
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

// refreshDue reports whether the scheduled refresh has a round under way
// or due.
func (f *follower) refreshDue() bool {
	return f.refreshAfter != "" || !f.cfg.Clock.Now().Before(f.refreshNext)
}

// refreshStep is the scheduled refresh's share of a step: under Run,
// storing what the refresher read (takeRefreshed); in FetchOnce alone,
// reading a slice itself when due.
func (f *follower) refreshStep(ctx context.Context, tracked []query.Tracked) error {
	if f.refreshWorker {
		return f.takeRefreshed(ctx)
	}
	if !f.refreshDue() {
		return nil
	}
	cp, ok, err := f.cfg.Store.Checkpoint(ctx, f.cfg.Chain)
	if err != nil || !ok {
		return err
	}
	return f.refresh(ctx, tracked, cp)
}

// refresh reads again the balances of the next RefreshBatch tracked
// addresses when a round is due, so that balances a block scan cannot see
// change (fees paid by others, rebasing tokens) do not go stale. It runs
// in every step, whatever the block cadence. A round starts every half
// RefreshInterval (the first half an interval after the fetcher's start)
// and is paced to end within a quarter interval: an address is read again
// within three quarters of RefreshInterval.
func (f *follower) refresh(ctx context.Context, tracked []query.Tracked, cp query.Block) error {
	now := f.cfg.Clock.Now()
	if !f.refreshDue() || len(tracked) == 0 {
		return nil
	}
	if f.refreshAfter == "" {
		f.refreshStart = now
	}
	i, _ := slices.BinarySearchFunc(tracked, f.refreshAfter, func(t query.Tracked, a string) int {
		switch {
		case t.Address < a:
			return -1
		case t.Address > a:
			return 1
		}
		return 0
	})
	if i < len(tracked) && tracked[i].Address == f.refreshAfter {
		i++
	}
	// The round is paced to end within a quarter interval whatever the
	// steps' frequency: a step reads what is due by now, at least a
	// slice of RefreshBatch.
	due := len(tracked)
	if pace := f.cfg.RefreshInterval / 4; now.Sub(f.refreshStart) < pace {
		due = int(int64(len(tracked)) * int64(now.Sub(f.refreshStart)) / int64(pace))
	}
	end := min(len(tracked), max(due, i+f.cfg.RefreshBatch))
	addrs := make([]string, 0, end-i)
	for _, t := range tracked[i:end] {
		addrs = append(addrs, t.Address)
	}
	if len(addrs) > 0 {
		bals, err := f.readBalances(ctx, addrs, cp.Number)
		if err != nil {
			return err
		}
		if err := f.reconcileStored(ctx, bals, cp); err != nil {
			return err
		}
		f.refreshAfter = addrs[len(addrs)-1]
	}
	if end >= len(tracked) {
		f.refreshAfter = ""
		f.refreshNext = f.refreshStart.Add(f.cfg.RefreshInterval / 2)
	}
	return nil
}
