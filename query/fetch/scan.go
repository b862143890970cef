package fetch

// Turning the activity of blocks (the family's, through the seam) into
// their transactions and statement rows.

import (
	"context"
	"errors"
	"slices"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// headPass names the head follower's pass over the chain to the family
// (chain.Query.Pass), which keeps how it reads (the EVM's dense and
// sparse modes) per pass.
const headPass = "head"

// activity reads the activity of the blocks from to to for set through
// the family's Reader: fewer blocks when the node has no more, or when
// one was replaced while reading (replaced: the node has the block after
// the last returned; the rest is for the next step).
func (f *follower) activity(ctx context.Context, from, to uint64, set map[string]bool) (acts []chain.BlockActivity, replaced bool, err error) {
	acts, err = f.cfg.Reader.Activity(ctx, chain.Query{From: from, To: to, Tracked: set, Pass: headPass})
	if err != nil {
		if ie := (*chain.InternalsError)(nil); errors.As(err, &ie) {
			f.metrics.internalsErrors.Inc()
		}
		return nil, false, f.nodeErr(err)
	}
	if next := from + uint64(len(acts)); next <= to {
		hs, err := f.cfg.Reader.Headers(ctx, next, next)
		if err != nil {
			return nil, false, f.nodeErr(err)
		}
		if len(hs) > 0 {
			f.log.Info("fetcher: block replaced while reading it", "block", next, "hash", hs[0].Hash)
			replaced = true
		}
	}
	return acts, replaced, nil
}

// scan turns the activity of consecutive blocks into their transactions
// and statement rows, and reads the balances of the addresses they
// touch, once, at the last block, to check the statement against (paced
// on a Reader whose balances cost a scan: checkFor).
func (f *follower) scan(ctx context.Context, acts []chain.BlockActivity, set map[string]bool) (chunk, error) {
	c := chunk{blocks: make([]query.Block, len(acts)), txs: make([][]query.Transaction, len(acts)), touched: make([][]string, len(acts))}
	if len(acts) == 0 {
		return c, nil
	}
	moves := make([][]move, len(acts))
	touched := make(map[string]bool)
	for i, a := range acts {
		c.blocks[i] = a.Block
		c.txs[i] = make([]query.Transaction, len(a.Txs))
		for j, tx := range a.Txs {
			c.txs[i][j] = storedTx(a.Block, tx)
			for _, tr := range c.txs[i][j].Transfers {
				if query.IsToken(tr.Asset) && tr.Error == "" {
					if err := f.learnToken(ctx, set, tr); err != nil {
						return chunk{}, err
					}
				}
			}
		}
		moves[i] = make([]move, len(a.Moves))
		for j, m := range a.Moves {
			moves[i][j] = move{address: m.Address, contract: m.Holding,
				cause: query.Cause{Kind: m.Kind, TxHash: m.Tx, Amount: m.Amount, Ref: m.Ref, Fee: m.Fee}}
		}
		c.touched[i] = touchedBy(a, set)
		for _, t := range c.touched[i] {
			touched[t] = true
		}
	}
	last := c.blocks[len(c.blocks)-1].Number
	check := f.checkFor(touched, set, last)
	var err error
	if c.balances, err = f.readBalances(ctx, check, last); err != nil {
		return chunk{}, err
	}
	f.checkDone(check, c.balances, last)
	if err := f.tokenInfo(ctx, f.facts.native, c.txs); err != nil {
		return chunk{}, err
	}
	if err := f.statement(ctx, &c, moves); err != nil {
		return chunk{}, err
	}
	c.balances = append(c.balances, f.told(touched, c.balances, c.blocks[len(c.blocks)-1])...)
	return c, nil
}

// storedTx is the transaction the store keeps of tx, of block b: its
// Account form when the family gives one, else one of its chain-neutral
// fields.
func storedTx(b query.Block, tx chain.Tx) query.Transaction {
	if tx.Account != nil {
		return *tx.Account
	}
	t := query.Transaction{Hash: tx.Hash, BlockNumber: b.Number, BlockHash: b.Hash, BlockTime: b.Time, Index: tx.Index,
		Status: tx.Status, From: tx.Payer, Fee: tx.Fee, Parties: tx.Parties, Detail: tx.Detail}
	for _, tr := range tx.Transfers {
		contract, tokenID := query.SplitHoldingKey(tr.Holding)
		t.Transfers = append(t.Transfers, query.Transfer{Position: tr.Position, Asset: tr.Asset, Contract: contract, TokenID: tokenID, From: tr.From, To: tr.To,
			Amount: tr.Amount, Kind: tr.Kind, Error: tr.Error})
	}
	return t
}

// touchedBy lists the tracked addresses (of set) block activity a
// touches: its Touched, or when the family gives none the addresses its
// transactions and movements name.
func touchedBy(a chain.BlockActivity, set map[string]bool) []string {
	if a.Touched != nil {
		return a.Touched
	}
	var out []string
	seen := make(map[string]bool)
	add := func(x string) {
		if set[x] && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	for _, tx := range a.Txs {
		for _, p := range tx.Parties {
			add(p)
		}
	}
	for _, m := range a.Moves {
		add(m.Address)
	}
	return out
}

// tokenInfo fills in the symbol, name and decimals of the transfers: the
// chain's coin (Config.Native, from the chain table) for native
// ones, also on a Reader of no tokens, the token's when the Reader tells
// them (chain.TokenReader; read once a token). A token the Reader cannot
// ask (chain.ErrNotImplemented) says nothing of itself.
func (c *core) tokenInfo(ctx context.Context, native query.NativeCoin, txs [][]query.Transaction) error {
	tr, _ := c.cfg.Reader.(chain.TokenReader) // nil: tokens say nothing of themselves
	for i := range txs {
		for j := range txs[i] {
			for k := range txs[i][j].Transfers {
				t := &txs[i][j].Transfers[k]
				if t.Asset == query.AssetNative && native.Symbol != "" {
					t.Symbol, t.Decimals = native.Symbol, native.Decimals
					continue
				}
				if tr == nil {
					continue
				}
				meta, err := tr.Token(ctx, t.Contract)
				if errors.Is(err, chain.ErrNotImplemented) {
					continue
				}
				if err != nil {
					return c.nodeErr(err)
				}
				t.Symbol, t.Name, t.Decimals = meta.Symbol, meta.Name, meta.Decimals
			}
		}
	}
	return nil
}

// learnToken remembers the token of a transfer for its tracked parties:
// its holding key (an ERC-1155 id is a holding of its own).
func (f *follower) learnToken(ctx context.Context, set map[string]bool, t query.Transfer) error {
	for _, a := range []string{t.From, t.To} {
		if !set[a] {
			continue
		}
		tokens, err := f.tokensOf(ctx, a)
		if err != nil {
			return err
		}
		if key := t.Holding(); !slices.Contains(tokens, key) {
			f.tokens[a] = append(tokens, key)
		}
	}
	return nil
}
