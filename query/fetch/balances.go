package fetch

// Reading balances: of touched, new and refreshed addresses, with the tokens each holds.

import (
	"context"
	"slices"

	"github.com/wharfhq/wharf/query"
)

// stateWindow is how far behind the confirmed head balances may be read:
// a node that is not an archive keeps the state of its last 128 blocks
// only.
const stateWindow = 64

// readBalances reads the native and every known token balance of
// addresses at block, or at the confirmed head when block is older than
// the node keeps state for (while catching up); balances carry the block
// they were read at.
func (f *follower) readBalances(ctx context.Context, addrs []string, at uint64) ([]query.Balance, error) {
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
func (f *follower) balancesAt(ctx context.Context, addrs []string, at uint64) ([]query.Balance, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	var qs []query.BalanceQuery
	for _, a := range addrs {
		tokens, err := f.tokensOf(ctx, a)
		if err != nil {
			return nil, err
		}
		qs = append(qs, query.BalanceQuery{Address: a})
		for _, c := range tokens {
			qs = append(qs, query.BalanceQuery{Address: a, Contract: c})
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
		if bals[i].Asset == query.AssetNative {
			bals[i].Symbol, bals[i].Decimals = f.facts.native.Symbol, f.facts.native.Decimals
		}
	}
	return bals, nil
}

// tokensOf returns the tokens address has held, from the store on first need.
func (f *follower) tokensOf(ctx context.Context, address string) ([]string, error) {
	if t, ok := f.tokens[address]; ok {
		return t, nil
	}
	stored, err := f.cfg.Store.Balances(ctx, f.cfg.Chain, address)
	if err != nil {
		return nil, err
	}
	tokens := []string{}
	for _, b := range stored {
		if query.IsToken(b.Asset) && !slices.Contains(tokens, b.Contract) {
			tokens = append(tokens, b.Contract)
		}
	}
	f.tokens[address] = tokens
	return tokens, nil
}
