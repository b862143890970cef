package fetch

// Turning blocks into movements: matching a block against the tracked
// addresses, and building the transactions that touch them and the
// movements of every kind (moves.go) that change their balances.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/query"
)

// scan scans consecutive blocks for the tracked addresses, builds their
// transactions and statement rows, and reads the balances of the
// addresses they touch, once, at the last block, to check the statement
// against. While most blocks match (dense), it reads every block's
// receipts, whose logs serve as its Transfer logs; otherwise (sparse) the
// Transfer logs of all the blocks in one call, and receipts of the blocks
// that matched only. With a trace API, every block's internal movements
// are read (one call a block). Either way a block costs the same whatever
// the number of subscriptions.
func (f *follower) scan(ctx context.Context, blocks []query.SourceBlock, set map[string]bool) (chunk, error) {
	var byBlock map[uint64][]query.TokenTransfer
	if !f.dense {
		first, last := blocks[0].Number, blocks[len(blocks)-1].Number
		logs, err := f.cfg.Source.Transfers(ctx, first, last, nil)
		if err != nil {
			return chunk{}, f.nodeErr(err)
		}
		byBlock = logsByBlock(logs)
		for i, b := range blocks {
			if slices.ContainsFunc(byBlock[b.Number], func(l query.TokenTransfer) bool { return l.BlockHash != b.Hash }) {
				// The logs come from another chain than the blocks: a reorg
				// while reading; keep the blocks before it.
				blocks = blocks[:i]
				break
			}
		}
	}
	tracked := func(a string) bool { return set[a] }
	ms := make([]matched, len(blocks))
	txs := make([][]query.Transaction, len(blocks))
	moves := make([][]move, len(blocks))
	var (
		mu  sync.Mutex
		cut = len(blocks) // the first block found replaced by a reorg
	)
	err := parallel.Do(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
		err := f.scanBlock(ctx, blocks[i], byBlock[blocks[i].Number], tracked, &ms[i], &txs[i], &moves[i])
		if errors.Is(err, query.ErrNotFound) {
			// The block's receipts or traces are of another block now: the
			// chain moved while reading. Keep the blocks before it; the
			// next step reads it again.
			mu.Lock()
			cut = min(cut, i)
			mu.Unlock()
			f.log.Info("fetcher: block replaced while reading it", "block", blocks[i].Number, "hash", blocks[i].Hash, "err", err)
			return nil
		}
		return err
	})
	if err != nil {
		return chunk{}, err
	}
	blocks, ms, txs, moves = blocks[:cut], ms[:cut], txs[:cut], moves[:cut]
	c := chunk{blocks: blocks, txs: txs}
	if len(blocks) == 0 {
		return c, nil
	}
	touched := make(map[string]bool)
	hits := 0
	c.touched = make([][]string, len(ms))
	for i := range ms {
		c.touched[i] = ms[i].touched
		if len(ms[i].hashes) > 0 {
			hits++
		}
		for _, a := range ms[i].touched {
			touched[a] = true
		}
		for _, h := range ms[i].hashes {
			for _, t := range ms[i].logs[h] {
				if err := f.learnToken(ctx, set, t); err != nil {
					return chunk{}, err
				}
			}
		}
	}
	f.dense = 2*hits >= len(ms)
	if c.balances, err = f.readBalances(ctx, sortedKeys(touched), blocks[len(blocks)-1].Number); err != nil {
		return chunk{}, err
	}
	if err := f.tokenInfo(ctx, f.facts.native, txs); err != nil {
		return chunk{}, err
	}
	if err := f.statement(ctx, &c, moves); err != nil {
		return chunk{}, err
	}
	return c, nil
}

// scanBlock reads what block b needs beyond its Transfer logs (given in
// sparse mode): its traces when the node has them, the receipts of the
// transactions that touch a tracked address (all of them in dense mode,
// or when the fee recipient is tracked, whose income is the block's
// priority fees), and builds its transactions and movements.
func (f *follower) scanBlock(ctx context.Context, b query.SourceBlock, logs []query.TokenTransfer, tracked func(string) bool,
	m *matched, txs *[]query.Transaction, moves *[]move) error {
	var (
		all    []query.Receipt
		traced []query.InternalMove
		err    error
	)
	if f.dense {
		if all, logs, err = f.cfg.Source.BlockReceipts(ctx, b.Block); err != nil {
			return f.nodeErr(err)
		}
	}
	if f.facts.traceAPI != "" {
		if traced, err = f.facts.tracer.Traces(ctx, b, f.facts.traceAPI); err != nil {
			f.metrics.traceErrors.Inc()
			return f.nodeErr(fmt.Errorf("traces of block %d: %w", b.Number, err))
		}
	}
	*m = matchBlock(b, logs, traced, tracked)
	var receipts []query.Receipt // of m.hashes, in order
	switch {
	case all == nil && m.miner:
		if all, _, err = f.cfg.Source.BlockReceipts(ctx, b.Block); err != nil {
			return f.nodeErr(err)
		}
	case all == nil && len(m.hashes) > 0:
		if receipts, err = f.cfg.Source.Receipts(ctx, b.Block, m.hashes); err != nil {
			return f.nodeErr(err)
		}
	}
	if all != nil {
		if receipts, err = pairReceipts(b, m.hashes, all); err != nil {
			return err
		}
	}
	*txs = m.transactions(b, receipts)
	*moves = blockMoves(b, *txs, all, tracked)
	return nil
}

// tokenInfo fills in the symbol, name and decimals of the transfers: the
// chain's coin (Config.Native, from the chain table) for native
// ones, the token's when the Source tells them (TokenInfo; read once a
// token).
func (c *core) tokenInfo(ctx context.Context, native query.NativeCoin, txs [][]query.Transaction) error {
	ti, ok := c.cfg.Source.(query.TokenInfo)
	if !ok {
		return nil
	}
	for i := range txs {
		for j := range txs[i] {
			for k := range txs[i][j].Transfers {
				tr := &txs[i][j].Transfers[k]
				if tr.Asset == query.AssetNative && native.Symbol != "" {
					tr.Symbol, tr.Decimals = native.Symbol, native.Decimals
					continue
				}
				meta, err := ti.Token(ctx, tr.Contract)
				if err != nil {
					return c.nodeErr(err)
				}
				tr.Symbol, tr.Name, tr.Decimals = meta.Symbol, meta.Name, meta.Decimals
			}
		}
	}
	return nil
}

// learnToken remembers the token of a transfer for its tracked parties:
// its holding key (an ERC-1155 id is a holding of its own).
func (f *follower) learnToken(ctx context.Context, set map[string]bool, t query.TokenTransfer) error {
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
