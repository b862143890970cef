package query

// Turning blocks into movements: matching a block against the tracked addresses and building the transactions that touch them.

import (
	"context"
	"fmt"
	"slices"
)

// scan scans consecutive blocks for the tracked addresses and reads the
// balances of the addresses they touch, once, at the last block. While
// most blocks match (dense), it reads every block's receipts, whose logs
// serve as its Transfer logs; otherwise (sparse) the Transfer logs of all
// the blocks in one call, and receipts of the blocks that matched only.
// Either way a block costs the same whatever the number of subscriptions.
func (f *Fetcher) scan(ctx context.Context, blocks []SourceBlock, set map[string]bool) (chunk, error) {
	var (
		ms  []matched
		err error
		c   chunk
	)
	if f.dense {
		c, ms, err = f.scanDense(ctx, blocks, set)
	} else {
		c, ms, err = f.scanSparse(ctx, blocks, set)
	}
	if err != nil || len(c.blocks) == 0 {
		return c, err
	}
	touched := make(map[string]bool)
	hits := 0
	for i := range ms {
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
	if c.balances, err = f.readBalances(ctx, sortedKeys(touched), c.blocks[len(c.blocks)-1].Number); err != nil {
		return chunk{}, err
	}
	return c, nil
}

// scanSparse reads the Transfer logs of blocks in one call, then the
// receipts of the blocks that matched, a few calls in flight.
func (f *Fetcher) scanSparse(ctx context.Context, blocks []SourceBlock, set map[string]bool) (chunk, []matched, error) {
	first, last := blocks[0].Number, blocks[len(blocks)-1].Number
	logs, err := f.cfg.Source.Transfers(ctx, first, last, nil)
	if err != nil {
		return chunk{}, nil, f.nodeErr(err)
	}
	byBlock := logsByBlock(logs)
	for i, b := range blocks {
		if slices.ContainsFunc(byBlock[b.Number], func(l TokenTransfer) bool { return l.BlockHash != b.Hash }) {
			// The logs come from another chain than the blocks: a reorg
			// while reading; keep the blocks before it.
			blocks = blocks[:i]
			break
		}
	}
	c := chunk{blocks: blocks, txs: make([][]Transaction, len(blocks))}
	tracked := func(a string) bool { return set[a] }
	ms := make([]matched, len(blocks))
	for i, b := range blocks {
		ms[i] = match(b, byBlock[b.Number], tracked)
	}
	err = parallel(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
		if len(ms[i].hashes) == 0 {
			return nil
		}
		receipts, err := f.cfg.Source.Receipts(ctx, blocks[i].Block, ms[i].hashes)
		if err != nil {
			return f.nodeErr(err)
		}
		c.txs[i] = ms[i].transactions(blocks[i], receipts)
		return nil
	})
	if err != nil {
		return chunk{}, nil, err
	}
	return c, ms, nil
}

// scanDense reads every block's receipts, a few calls in flight, and
// matches on the Transfer logs in them.
func (f *Fetcher) scanDense(ctx context.Context, blocks []SourceBlock, set map[string]bool) (chunk, []matched, error) {
	c := chunk{blocks: blocks, txs: make([][]Transaction, len(blocks))}
	tracked := func(a string) bool { return set[a] }
	ms := make([]matched, len(blocks))
	err := parallel(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
		receipts, logs, err := f.cfg.Source.BlockReceipts(ctx, blocks[i].Block)
		if err != nil {
			return f.nodeErr(err)
		}
		ms[i] = match(blocks[i], logs, tracked)
		if len(ms[i].hashes) == 0 {
			return nil
		}
		byHash := make(map[string]Receipt, len(receipts))
		for _, r := range receipts {
			byHash[r.TxHash] = r
		}
		picked := make([]Receipt, len(ms[i].hashes))
		for j, h := range ms[i].hashes {
			r, ok := byHash[h]
			if !ok {
				return fmt.Errorf("block %d %s: no receipt for %s: %w", blocks[i].Number, blocks[i].Hash, h, ErrNotFound)
			}
			picked[j] = r
		}
		c.txs[i] = ms[i].transactions(blocks[i], picked)
		return nil
	})
	if err != nil {
		return chunk{}, nil, err
	}
	return c, ms, nil
}

// learnToken remembers the token of a transfer for its tracked parties.
func (f *Fetcher) learnToken(ctx context.Context, set map[string]bool, t TokenTransfer) error {
	for _, a := range []string{t.From, t.To} {
		if !set[a] {
			continue
		}
		tokens, err := f.tokensOf(ctx, a)
		if err != nil {
			return err
		}
		if !slices.Contains(tokens, t.Contract) {
			f.tokens[a] = append(tokens, t.Contract)
		}
	}
	return nil
}

// logsByBlock groups Transfer logs by block number.
func logsByBlock(logs []TokenTransfer) map[uint64][]TokenTransfer {
	out := make(map[uint64][]TokenTransfer)
	for _, l := range logs {
		out[l.BlockNumber] = append(out[l.BlockNumber], l)
	}
	return out
}

// matched is what of one block touches tracked addresses.
type matched struct {
	hashes  []string                   // matched transactions, in block order
	logs    map[string][]TokenTransfer // the Transfer logs of each matched transaction
	touched []string                   // tracked addresses touched, without duplicates
}

// match finds the transactions of b that touch a tracked address, as
// sender, recipient or party of one of its Transfer logs. Its cost is
// that of the block: one map look-up per party, whatever the number of
// tracked addresses.
func match(b SourceBlock, logs []TokenTransfer, tracked func(string) bool) matched {
	m := matched{logs: make(map[string][]TokenTransfer)}
	hit := make(map[string]bool)
	seen := make(map[string]bool)
	touch := func(a string) bool {
		if a == "" || !tracked(a) {
			return false
		}
		if !seen[a] {
			seen[a] = true
			m.touched = append(m.touched, a)
		}
		return true
	}
	for _, l := range logs {
		if l.BlockHash != b.Hash {
			continue
		}
		m.logs[l.TxHash] = append(m.logs[l.TxHash], l)
		f, t := touch(l.From), touch(l.To)
		if f || t {
			hit[l.TxHash] = true
		}
	}
	for _, tx := range b.Txs {
		f, t := touch(tx.From), touch(tx.To)
		if f || t || hit[tx.Hash] {
			m.hashes = append(m.hashes, tx.Hash)
		}
	}
	return m
}

// transactions builds the matched transactions of b from their receipts
// (in the order of m.hashes): the native value as a transfer with log
// index -1 when it moved, and the ERC-20 transfers of the transaction.
func (m matched) transactions(b SourceBlock, receipts []Receipt) []Transaction {
	byHash := make(map[string]SourceTx, len(m.hashes))
	for _, tx := range b.Txs {
		byHash[tx.Hash] = tx
	}
	out := make([]Transaction, 0, len(m.hashes))
	for i, h := range m.hashes {
		tx := byHash[h]
		t := Transaction{
			Hash:        h,
			BlockNumber: b.Number,
			BlockHash:   b.Hash,
			BlockTime:   b.Time,
			Index:       tx.Index,
			Status:      receipts[i].Status,
			From:        tx.From,
			To:          tx.To,
			Value:       tx.Value,
			Fee:         receipts[i].Fee,
			Nonce:       tx.Nonce,
		}
		if t.Status == StatusSuccess && tx.Value != "0" {
			t.Transfers = append(t.Transfers, Transfer{LogIndex: -1, Asset: AssetNative, From: tx.From, To: tx.To, Amount: tx.Value})
		}
		for _, l := range m.logs[h] {
			t.Transfers = append(t.Transfers, Transfer{LogIndex: l.LogIndex, Asset: AssetERC20, Contract: l.Contract, From: l.From, To: l.To, Amount: l.Amount})
		}
		out = append(out, t)
	}
	return out
}
