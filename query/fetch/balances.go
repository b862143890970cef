package fetch

// Reading balances: of touched, new and refreshed addresses, with the tokens each holds.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// readsBalances reports whether the chain's Reader tells balances at a
// block (chain.BalanceReader): only then are statements checked against
// the node, differences located and balances refreshed. Without it a
// statement is the sum of the movements the family lists, unchecked.
func (c *core) readsBalances() bool {
	_, ok := c.cfg.Reader.(chain.BalanceReader)
	return ok
}

// nodeBalances reads the balances of qs at block at from the Reader.
// Errors: chain.ErrNotImplemented when the Reader tells no balances, or
// none at that block (a UTXO node tells them at its tip only);
// query.ErrNoState when the node no longer keeps that block's state.
func (c *core) nodeBalances(ctx context.Context, at uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
	br, ok := c.cfg.Reader.(chain.BalanceReader)
	if !ok {
		return nil, fmt.Errorf("balances at block %d: %w", at, chain.ErrNotImplemented)
	}
	return br.Balances(ctx, at, qs)
}

// unanswered reports whether err says the node cannot tell the balances
// asked at that block at all (not a failure: no check is possible there).
func unanswered(err error) bool {
	return errors.Is(err, chain.ErrNotImplemented) && !errors.Is(err, query.ErrNoState)
}

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
// at block at; none when the Reader cannot tell them there (no check is
// possible at at). Errors: ErrNoState when the node keeps no state for at.
func (f *follower) balancesAt(ctx context.Context, addrs []string, at uint64) ([]query.Balance, error) {
	if len(addrs) == 0 || !f.readsBalances() {
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
	bals, err := f.nodeBalances(ctx, at, qs)
	if unanswered(err) {
		return nil, nil
	}
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
