package query

// Turning blocks into movements: matching a block against the tracked
// addresses, and building the transactions that touch them and the
// movements of every kind (fetch_move.go) that change their balances.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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
func (f *Fetcher) scan(ctx context.Context, blocks []SourceBlock, set map[string]bool) (chunk, error) {
	var byBlock map[uint64][]TokenTransfer
	if !f.dense {
		first, last := blocks[0].Number, blocks[len(blocks)-1].Number
		logs, err := f.cfg.Source.Transfers(ctx, first, last, nil)
		if err != nil {
			return chunk{}, f.nodeErr(err)
		}
		byBlock = logsByBlock(logs)
		for i, b := range blocks {
			if slices.ContainsFunc(byBlock[b.Number], func(l TokenTransfer) bool { return l.BlockHash != b.Hash }) {
				// The logs come from another chain than the blocks: a reorg
				// while reading; keep the blocks before it.
				blocks = blocks[:i]
				break
			}
		}
	}
	tracked := func(a string) bool { return set[a] }
	ms := make([]matched, len(blocks))
	txs := make([][]Transaction, len(blocks))
	moves := make([][]move, len(blocks))
	var (
		mu  sync.Mutex
		cut = len(blocks) // the first block found replaced by a reorg
	)
	err := parallel(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
		err := f.scanBlock(ctx, blocks[i], byBlock[blocks[i].Number], tracked, &ms[i], &txs[i], &moves[i])
		if errors.Is(err, ErrNotFound) {
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
	if c.balances, err = f.readBalances(ctx, sortedKeys(touched), blocks[len(blocks)-1].Number); err != nil {
		return chunk{}, err
	}
	if err := f.tokenInfo(ctx, txs); err != nil {
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
func (f *Fetcher) scanBlock(ctx context.Context, b SourceBlock, logs []TokenTransfer, tracked func(string) bool,
	m *matched, txs *[]Transaction, moves *[]move) error {
	var (
		all    []Receipt
		traced []InternalMove
		err    error
	)
	if f.dense {
		if all, logs, err = f.cfg.Source.BlockReceipts(ctx, b.Block); err != nil {
			return f.nodeErr(err)
		}
	}
	if f.traceAPI != "" {
		if traced, err = f.tracer.Traces(ctx, b, f.traceAPI); err != nil {
			f.metrics.traceErrors.Inc()
			return f.nodeErr(fmt.Errorf("traces of block %d: %w", b.Number, err))
		}
	}
	*m = matchBlock(b, logs, traced, tracked)
	var receipts []Receipt // of m.hashes, in order
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
		byHash := make(map[string]Receipt, len(all))
		for _, r := range all {
			byHash[r.TxHash] = r
		}
		receipts = make([]Receipt, len(m.hashes))
		for j, h := range m.hashes {
			r, ok := byHash[h]
			if !ok {
				return fmt.Errorf("block %d %s: no receipt for %s: %w", b.Number, b.Hash, h, ErrNotFound)
			}
			receipts[j] = r
		}
	}
	*txs = m.transactions(b, receipts)
	*moves = blockMoves(b, *txs, all, tracked)
	return nil
}

// tokenInfo fills in the symbol and decimals of the transfers: the
// chain's coin (FetcherConfig.Native, from the chain table) for native
// ones, the token's when the Source tells them (TokenInfo; read once a
// token).
func (f *Fetcher) tokenInfo(ctx context.Context, txs [][]Transaction) error {
	ti, ok := f.cfg.Source.(TokenInfo)
	if !ok {
		return nil
	}
	for i := range txs {
		for j := range txs[i] {
			for k := range txs[i][j].Transfers {
				tr := &txs[i][j].Transfers[k]
				if tr.Asset == AssetNative && f.native.Symbol != "" {
					tr.Symbol, tr.Decimals = f.native.Symbol, f.native.Decimals
					continue
				}
				sym, dec, err := ti.Token(ctx, tr.Contract)
				if err != nil {
					return f.nodeErr(err)
				}
				tr.Symbol, tr.Decimals = sym, dec
			}
		}
	}
	return nil
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
	moves   map[string][]InternalMove  // the internal movements of each matched transaction
	touched []string                   // tracked addresses touched, without duplicates
	miner   bool                       // the block's fee recipient is tracked
}

// matchBlock finds the transactions of b that touch a tracked address:
// as sender, recipient, created contract, or party of one of its Transfer
// logs or internal movements; and the tracked addresses its withdrawals
// and fee income go to. Its cost is that of the block: one map look-up
// per party, whatever the number of tracked addresses.
func matchBlock(b SourceBlock, logs []TokenTransfer, moves []InternalMove, tracked func(string) bool) matched {
	m := matched{logs: make(map[string][]TokenTransfer), moves: make(map[string][]InternalMove)}
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
	for _, mv := range moves {
		m.moves[mv.TxHash] = append(m.moves[mv.TxHash], mv)
		f, t := touch(mv.From), touch(mv.To)
		if f || t {
			hit[mv.TxHash] = true
		}
	}
	for _, tx := range b.Txs {
		f, t, c := touch(tx.From), touch(tx.To), touch(tx.Created)
		if f || t || c || hit[tx.Hash] {
			m.hashes = append(m.hashes, tx.Hash)
		}
	}
	for _, w := range b.Withdrawals {
		touch(w.Address)
	}
	m.miner = touch(b.Miner)
	return m
}

// transactions builds the matched transactions of b from their receipts
// (in the order of m.hashes): the native value as a transfer with log
// index -1 when it moved, its internal movements (-2, -3...) and the
// ERC-20 transfers of the transaction.
func (m matched) transactions(b SourceBlock, receipts []Receipt) []Transaction {
	byHash := make(map[string]SourceTx, len(m.hashes))
	for _, tx := range b.Txs {
		byHash[tx.Hash] = tx
	}
	out := make([]Transaction, 0, len(m.hashes))
	for i, h := range m.hashes {
		tx := byHash[h]
		t := Transaction{
			Hash:              h,
			BlockNumber:       b.Number,
			BlockHash:         b.Hash,
			BlockTime:         b.Time,
			Index:             tx.Index,
			Status:            receipts[i].Status,
			From:              tx.From,
			To:                tx.To,
			Value:             tx.Value,
			Fee:               receipts[i].Fee,
			Nonce:             tx.Nonce,
			Type:              tx.Type,
			GasLimit:          tx.GasLimit,
			GasUsed:           receipts[i].GasUsed,
			EffectiveGasPrice: receipts[i].EffectiveGasPrice,
			Method:            tx.Method,
		}
		if t.EffectiveGasPrice == "" {
			t.EffectiveGasPrice = "0"
		}
		if t.Status == StatusSuccess {
			t.Created = tx.Created
		}
		if t.Status == StatusSuccess && tx.Value != "0" {
			to, kind := tx.To, KindTransaction
			if to == "" {
				to, kind = tx.Created, KindCreation
			}
			t.Transfers = append(t.Transfers, Transfer{LogIndex: -1, Asset: AssetNative, From: tx.From, To: to, Amount: tx.Value, Kind: kind})
		}
		if t.Status == StatusSuccess {
			for j, mv := range m.moves[h] {
				if mv.Kind == KindCreation && t.Created == "" {
					t.Created = mv.To
				}
				if mv.Amount == "0" {
					continue
				}
				t.Transfers = append(t.Transfers, Transfer{LogIndex: -2 - j, Asset: AssetNative, From: mv.From, To: mv.To, Amount: mv.Amount, Kind: mv.Kind})
			}
		}
		for _, l := range m.logs[h] {
			t.Transfers = append(t.Transfers, Transfer{LogIndex: l.LogIndex, Asset: AssetERC20, Contract: l.Contract, From: l.From, To: l.To, Amount: l.Amount, Kind: KindToken})
		}
		out = append(out, t)
	}
	return out
}
