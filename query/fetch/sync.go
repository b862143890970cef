package fetch

// Syncing new subscriptions: balances at once, and the backfill they are
// owed (backfill.go runs it).

import (
	"context"
	"errors"
	"fmt"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// sync gives new subscriptions their balances at once and marks them
// synced up to cp, from where the head follower covers them, owing them a
// backfill: the blocks from the start height its subscriber gave, else
// the last BackfillBlocks blocks (or the whole history with BackfillAll)
// for an address never covered, or the gap since it was last tracked. The backfills run beside the head follower (backfill.go).
// It returns the subscriptions synced: none while the fetcher catches up
// from further behind than the node keeps state for (syncBalances).
func (f *follower) sync(ctx context.Context, fresh []query.Tracked, cp query.Block) ([]query.Tracked, error) {
	addrs := make([]string, len(fresh))
	for i, t := range fresh {
		addrs[i] = t.Address
	}
	bals, ok, err := f.syncBalances(ctx, addrs, cp.Number)
	if err != nil || !ok {
		return nil, err
	}
	all, err := f.historyAvailable(ctx, cp.Number, fresh)
	if err != nil {
		return nil, err
	}
	byLow := make(map[uint64][]string)
	owed := make(map[string]bool) // addresses owed a backfill
	for _, t := range fresh {
		low := t.SyncFrom
		switch {
		case t.Covered:
		case t.Born:
			// The subscriber's start height: nothing of the address
			// lies below it.
			low = t.StartBlock
		case all:
			low = 0
		case cp.Number+1 > f.cfg.BackfillBlocks:
			low = cp.Number + 1 - f.cfg.BackfillBlocks
		default:
			low = 0
		}
		byLow[low] = append(byLow[low], t.Address)
		owed[t.Address] = low <= cp.Number
	}
	// The statement of an address owed a backfill starts again at its
	// balances at cp: the backfill's rows chain down from there to meet
	// its earlier statement, if any. The others' are checked there.
	var start, check []query.Balance
	for _, b := range bals {
		if owed[b.Address] {
			start = append(start, b)
		} else {
			check = append(check, b)
		}
	}
	if err := f.startStatements(ctx, start, cp); err != nil {
		return nil, err
	}
	if err := f.reconcileStored(ctx, check, cp); err != nil {
		return nil, err
	}
	for _, low := range sortedKeys(byLow) {
		if err := f.cfg.Store.MarkSynced(ctx, f.cfg.Chain, byLow[low], cp.Number, low); err != nil {
			return nil, err
		}
	}
	f.log.Info("fetcher: synced new subscriptions", "addresses", len(addrs), "block", cp.Number, "full_history", all)
	return fresh, nil
}

// syncBalances reads the balances of new subscriptions at cp, where the
// statements of those owed a backfill start again (ok), even when the
// fetcher is catching up far behind the node; from the node's tip when it
// tells them there only (carriedBack). A node that keeps no state
// that old (pruned) cannot tell them: the subscriptions wait, SYNCING,
// until the head follower is within the node's state window (ok false).
func (f *follower) syncBalances(ctx context.Context, addrs []string, cp uint64) (bals []query.Balance, ok bool, err error) {
	if f.target <= cp+stateWindow {
		bals, err = f.readBalances(ctx, addrs, cp)
		if err == nil && len(bals) == 0 && len(addrs) > 0 && f.readsBalances() {
			// A node that tells balances at its tip only (a UTXO node's
			// unspent outputs), cp under it (--confirmations).
			if bals, ok, err = f.carriedBack(ctx, addrs, cp); err != nil || !ok {
				return nil, false, err
			}
		}
		if err == nil {
			f.setSyncWait("")
		}
		return bals, err == nil, err
	}
	bals, err = f.balancesAt(ctx, addrs, cp)
	if err == nil && len(bals) == 0 && len(addrs) > 0 && f.readsBalances() {
		// A node that tells balances at its tip only, which the
		// fetcher is too far below to carry them back from: started
		// there with no balance, the statements would begin unchecked
		// at zero.
		f.setSyncWait(fmt.Sprintf("the node tells balances at its tip only, and the fetcher (at block %d of %d) is more than %d blocks below it: new subscriptions wait until it has caught up", cp, f.target, stateWindow))
		if !f.syncWaitSaid {
			f.syncWaitSaid = true
			f.log.Info("fetcher: new subscriptions wait until the fetcher has caught up: the node tells balances at its tip only",
				"addresses", len(addrs), "stored_head", cp, "target", f.target)
		}
		return nil, false, nil
	}
	switch {
	case errors.Is(err, query.ErrNoState):
		f.setSyncWait(fmt.Sprintf("the node keeps no state at block %d, where new subscriptions start: they wait until the fetcher (at block %d of %d) is within the node's state window", cp, cp, f.target))
		if !f.syncWaitSaid {
			f.syncWaitSaid = true
			f.log.Info("fetcher: new subscriptions wait until the fetcher has caught up: the node keeps no state for the stored head",
				"addresses", len(addrs), "stored_head", cp, "target", f.target)
		}
		return nil, false, nil
	case err != nil:
		return nil, false, f.nodeErr(err)
	}
	f.syncWaitSaid = false
	f.setSyncWait("")
	return bals, true, nil
}

// syncPass names the sync's reading of the blocks above the stored head
// to the family (chain.Query.Pass).
const syncPass = "sync"

// carriedBack returns the balances of addrs at block at of a node that
// tells them at its tip only: the tip's, less the movements of the blocks
// above at (their Activity), each said to be at at. None, ok, when the
// node does not tell them at its tip either (the statements then start
// unchecked); ok false when the chain moved while reading, or the node's
// tip is not above at (a reorg the follower has yet to see), or too far
// above it to carry back from: the sync waits for a next step.
func (f *follower) carriedBack(ctx context.Context, addrs []string, at uint64) ([]query.Balance, bool, error) {
	head, err := f.cfg.Reader.Head(ctx)
	if err != nil {
		return nil, false, f.nodeErr(err)
	}
	if head <= at || head > at+stateWindow+f.cfg.Confirmations {
		return nil, false, nil
	}
	tip, err := f.balancesAt(ctx, addrs, head)
	if err != nil {
		return nil, false, f.nodeErr(err)
	}
	if len(tip) == 0 {
		return nil, true, nil
	}
	set := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		set[a] = true
	}
	acts, err := f.cfg.Reader.Activity(ctx, chain.Query{From: at + 1, To: head, Tracked: set, Pass: syncPass})
	if err != nil {
		return nil, false, f.nodeErr(err)
	}
	if len(acts) != int(head-at) {
		return nil, false, nil // replaced while reading
	}
	moved := make(map[query.Holding]query.Amount)
	for _, a := range acts {
		for _, m := range a.Moves {
			k := query.Holding{Address: m.Address, Contract: m.Holding}
			moved[k] = moved[k].Add(m.Amount)
		}
	}
	for i := range tip {
		tip[i].Amount = tip[i].Amount.Sub(moved[query.Holding{Address: tip[i].Address, Contract: tip[i].Contract}])
		tip[i].Block = at
	}
	return tip, true, nil
}

// historyAvailable reports whether new subscriptions (fresh) get their
// whole history: BackfillAll, on a node that can tell an address's old
// history. A node that cannot is said once, and the window is
// backfilled instead.
func (f *follower) historyAvailable(ctx context.Context, cp uint64, fresh []query.Tracked) (bool, error) {
	if !f.cfg.BackfillAll {
		return false, nil
	}
	if cp == 0 {
		return true, nil // no past to read
	}
	ok, err := f.oldHistory(ctx, fresh[0].Address)
	if ok || err != nil {
		return ok, err
	}
	if !f.noStateSaid {
		f.noStateSaid = true
		f.log.Warn("fetcher: --backfill-blocks all needs an archive node (or, on a UTXO chain, an address index), and this node cannot tell the history of old blocks: new subscriptions get a window of the last blocks instead",
			"blocks", f.cfg.BackfillBlocks)
	}
	return false, nil
}

// oldHistory reports whether the node can tell where address moved in
// the oldest blocks, which a node that is not an archive (or keeps no
// address index) cannot: its chain.HistoryReach, else its History of the
// block after the genesis.
func (f *follower) oldHistory(ctx context.Context, address string) (bool, error) {
	if hr, ok := f.cfg.Reader.(chain.HistoryReach); ok {
		full, err := hr.FullHistory(ctx)
		return full, f.nodeErr(err)
	}
	hs, ok := f.cfg.Reader.(chain.HistorySource)
	if !ok {
		return false, nil
	}
	_, err := hs.History(ctx, address, 1, 1)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, chain.ErrNotImplemented), errors.Is(err, query.ErrNoState):
		return false, nil
	}
	return false, f.nodeErr(err)
}
