package api

// Balances split by maturity: on a chain some of whose outputs cannot be
// spent at once (chain.Maturing: a UTXO chain's coinbase outputs, for
// 100 confirmations), a balance of the coin says how much of it is
// spendable and how much is still immature. The statement tells it
// without the node: such an output cannot be spent before it matures,
// so every one the statement's newest blocks received is still unspent.

import (
	"context"
	"errors"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// maturityRows bounds the statement rows of one address immature reads:
// a row a block, over the window of a maturity of 100 blocks.
const maturityRows = 1000

// immatureOf returns, for each of an address's balances bs, its immature
// part (nil when the balance is not split): the coin's balance, on a
// chain whose family has maturing outputs. A balance is split as of its
// block; with current, as of the newest stored block, if later (the
// balance has not changed since its block, and outputs have matured).
func (s *Server) immatureOf(ctx context.Context, a query.Account, chainName, address string, bs []query.Balance, current bool) ([]*query.Amount, error) {
	m, ok := s.syntax[chainName].(chain.Maturing)
	if !ok {
		return nil, nil
	}
	var head uint64
	if current {
		t, err := s.head(ctx, chainName)
		if err != nil {
			return nil, err
		}
		head = t.head
	}
	out := make([]*query.Amount, len(bs))
	for i, b := range bs {
		if b.Asset != query.AssetNative {
			continue
		}
		v, err := s.immature(ctx, a, chainName, address, max(b.Block, head), m.Maturity())
		if err != nil {
			return nil, err
		}
		out[i] = &v
	}
	return out, nil
}

// immature sums what the causes of kinds that mature moved into address
// in the blocks where they have not matured yet once block at is the
// newest: a cause of block h whose kind needs n confirmations is
// immature while at-h+1 < n.
func (s *Server) immature(ctx context.Context, a query.Account, chainName, address string, at uint64, maturity map[string]uint64) (query.Amount, error) {
	var sum query.Amount
	var window uint64 // the most confirmations a kind needs
	for _, n := range maturity {
		window = max(window, n)
	}
	if window == 0 {
		return sum, nil
	}
	// Rows at or before at, newest first: the cursor is after block at+1.
	after := &query.ChangeCursor{Block: at + 1}
	for read := 0; read < maturityRows; {
		rows, err := s.store.AccountBalanceChanges(ctx, a.ID, chainName, address, after, 100)
		if errors.Is(err, query.ErrNotSubscribed) {
			return sum, nil
		}
		if err != nil {
			return sum, err
		}
		for _, c := range rows {
			if at-c.Block+1 >= window {
				return sum, nil
			}
			if c.Contract != "" {
				continue
			}
			for _, cs := range c.Causes {
				if n := maturity[cs.Kind]; n > 0 && at-c.Block+1 < n && cs.Amount.Sign() > 0 {
					sum = sum.Add(cs.Amount)
				}
			}
		}
		read += len(rows)
		if len(rows) < 100 {
			return sum, nil
		}
		last := rows[len(rows)-1]
		after = &query.ChangeCursor{Block: last.Block, Contract: last.Contract}
	}
	return sum, nil
}
