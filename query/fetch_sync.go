package query

// Syncing new subscriptions: balances at once, then the backfill.

import (
	"context"
	"slices"
)

// sync gives new subscriptions their balances at once and their past
// transactions: the last BackfillBlocks blocks for an address never
// tracked, or the gap since it was last tracked. Then it marks them synced
// up to cp, from where the block scan covers them.
func (f *Fetcher) sync(ctx context.Context, fresh []Tracked, cp Block) error {
	addrs := make([]string, len(fresh))
	for i, t := range fresh {
		addrs[i] = t.Address
	}
	// Balances first: native and known tokens now, so that they are there
	// before a long backfill ends.
	bals, err := f.readBalances(ctx, addrs, cp.Number)
	if err != nil {
		return err
	}
	if err := f.reconcileStored(ctx, bals, cp); err != nil {
		return err
	}
	// One backfill per distinct start block.
	byFrom := make(map[uint64][]string)
	for _, t := range fresh {
		from := t.SyncFrom
		if from == 0 && cp.Number+1 > f.cfg.BackfillBlocks {
			from = cp.Number + 1 - f.cfg.BackfillBlocks
		}
		byFrom[from] = append(byFrom[from], t.Address)
	}
	set := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		set[a] = true
	}
	newTokens := make(map[string]bool)
	for _, from := range sortedKeys(byFrom) {
		txs, err := f.cfg.Backfiller.Backfill(ctx, from, cp.Number, byFrom[from])
		if err != nil {
			return f.nodeErr(err)
		}
		if err := f.cfg.Store.PutTransactions(ctx, f.cfg.Chain, txs); err != nil {
			return err
		}
		for _, tx := range txs {
			for _, tr := range tx.Transfers {
				if tr.Asset != AssetERC20 {
					continue
				}
				for _, a := range []string{tr.From, tr.To} {
					if set[a] && !slices.Contains(f.tokens[a], tr.Contract) {
						f.tokens[a] = append(f.tokens[a], tr.Contract)
						newTokens[a] = true
					}
				}
			}
		}
	}
	if len(newTokens) > 0 {
		bals, err := f.readBalances(ctx, sortedKeys(newTokens), cp.Number)
		if err != nil {
			return err
		}
		if err := f.reconcileStored(ctx, bals, cp); err != nil {
			return err
		}
	}
	if err := f.cfg.Store.MarkSynced(ctx, f.cfg.Chain, addrs, cp.Number); err != nil {
		return err
	}
	f.log.Info("fetcher: synced new subscriptions", "addresses", len(addrs), "block", cp.Number)
	return nil
}
