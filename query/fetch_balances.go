package query

// Refreshing balances: reading them for touched, new and due addresses.

import (
	"context"
	"slices"
)

// refreshDue reports whether the scheduled refresh has a round under way
// or due.
func (f *Fetcher) refreshDue() bool {
	return f.refreshAfter != "" || !f.cfg.Clock.Now().Before(f.refreshNext)
}

// refreshStep is the scheduled refresh's share of a step: under Run,
// storing what the refresh worker read (refresh.go); in FetchOnce alone,
// reading a slice itself when due.
func (f *Fetcher) refreshStep(ctx context.Context, tracked []Tracked) error {
	if f.refreshAsync {
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
func (f *Fetcher) refresh(ctx context.Context, tracked []Tracked, cp Block) error {
	now := f.cfg.Clock.Now()
	if !f.refreshDue() || len(tracked) == 0 {
		return nil
	}
	if f.refreshAfter == "" {
		f.refreshStart = now
	}
	i, _ := slices.BinarySearchFunc(tracked, f.refreshAfter, func(t Tracked, a string) int {
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

// stateWindow is how far behind the confirmed head balances may be read:
// a node that is not an archive keeps the state of its last 128 blocks
// only.
const stateWindow = 64

// readBalances reads the native and every known token balance of
// addresses at block, or at the confirmed head when block is older than
// the node keeps state for (while catching up); balances carry the block
// they were read at.
func (f *Fetcher) readBalances(ctx context.Context, addrs []string, at uint64) ([]Balance, error) {
	if f.target > at+stateWindow {
		at = f.target
	}
	bals, err := f.balancesAt(ctx, addrs, at)
	if err != nil {
		return nil, f.nodeErr(err)
	}
	return bals, nil
}

// balancesAt reads the native and every known token balance of addresses
// at block at. Errors: ErrNoState when the node keeps no state for at.
func (f *Fetcher) balancesAt(ctx context.Context, addrs []string, at uint64) ([]Balance, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	var qs []BalanceQuery
	for _, a := range addrs {
		tokens, err := f.tokensOf(ctx, a)
		if err != nil {
			return nil, err
		}
		qs = append(qs, BalanceQuery{Address: a})
		for _, c := range tokens {
			qs = append(qs, BalanceQuery{Address: a, Contract: c})
		}
	}
	bals, err := f.cfg.Source.Balances(ctx, at, qs)
	if err != nil {
		return nil, err
	}
	now := f.cfg.Clock.Now()
	for i := range bals {
		bals[i].Chain = f.cfg.Chain
		bals[i].Updated = now
		if bals[i].Asset == AssetNative {
			bals[i].Symbol, bals[i].Decimals = f.native.Symbol, f.native.Decimals
		}
	}
	return bals, nil
}

// tokensOf returns the tokens address has held, from the store on first need.
func (f *Fetcher) tokensOf(ctx context.Context, address string) ([]string, error) {
	if t, ok := f.tokens[address]; ok {
		return t, nil
	}
	stored, err := f.cfg.Store.Balances(ctx, f.cfg.Chain, address)
	if err != nil {
		return nil, err
	}
	tokens := []string{}
	for _, b := range stored {
		if b.Asset == AssetERC20 && !slices.Contains(tokens, b.Contract) {
			tokens = append(tokens, b.Contract)
		}
	}
	f.tokens[address] = tokens
	return tokens, nil
}
