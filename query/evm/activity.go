package evm

// The activity of a block range: matching each block against the tracked
// addresses in one pass, and building the transactions that touch them
// and the movements of every kind (moves.go) that change their balances.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// Activity reads blocks q.From to q.To and what in them touches
// q.Tracked. While most blocks of the pass match (dense), it reads every
// block's receipts, whose logs serve as its Transfer logs; otherwise
// (sparse) the Transfer logs of all the blocks in one call (filtered by
// address when the pass tracks few), and the receipts of the blocks that
// matched only. With a trace API (UseInternals), every block's internal
// movements are read, one call a block, unless q.NoInternals. Either
// way a block costs the same whatever the number of tracked addresses.
func (r *Reader) Activity(ctx context.Context, q chain.Query) ([]chain.BlockActivity, error) {
	if q.To < q.From {
		return nil, nil
	}
	blocks, err := r.src.Blocks(ctx, q.From, q.To)
	if err != nil {
		return nil, err
	}
	scanned, err := r.scan(ctx, linked(blocks), q.Tracked, q.Pass, !q.NoInternals)
	if err != nil {
		return nil, err
	}
	out := make([]chain.BlockActivity, len(scanned))
	for i, s := range scanned {
		if out[i], err = s.activity(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanned is what of one block touches the tracked addresses.
type scanned struct {
	block   query.SourceBlock
	txs     []query.Transaction
	moves   []move
	touched []string
}

// filterFrom is the most tracked addresses a sparse pass filters its
// Transfer logs by; beyond it one unfiltered call serves them all.
const filterFrom = 64

// scan scans consecutive blocks for the tracked addresses of set. It
// returns the blocks before the first one found replaced while reading
// (a reorg).
func (r *Reader) scan(ctx context.Context, blocks []query.SourceBlock, set map[string]bool, pass string, internals bool) ([]scanned, error) {
	if len(blocks) == 0 {
		return nil, nil
	}
	r.mu.Lock()
	dense := r.dense[pass]
	r.mu.Unlock()
	var (
		byBlock  map[uint64][]query.TokenTransfer
		filtered bool // byBlock holds only the logs of tracked parties
	)
	if !dense {
		var filter []string // nil: every Transfer log
		if filtered = len(set) <= filterFrom; filtered {
			filter = make([]string, 0, len(set))
			for a := range set {
				filter = append(filter, a)
			}
			slices.Sort(filter)
		}
		if len(set) == 0 {
			byBlock = map[uint64][]query.TokenTransfer{}
		} else {
			first, last := blocks[0].Number, blocks[len(blocks)-1].Number
			logs, err := r.src.Transfers(ctx, first, last, filter)
			if err != nil {
				return nil, err
			}
			byBlock = logsByBlock(logs)
		}
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
	api := r.traceAPI()
	if !internals {
		api = ""
	}
	out := make([]scanned, len(blocks))
	var (
		mu  sync.Mutex
		cut = len(blocks) // the first block found replaced by a reorg
	)
	err := parallel.Do(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
		err := r.scanBlock(ctx, blocks[i], byBlock[blocks[i].Number], dense, filtered, api, tracked, &out[i])
		if errors.Is(err, query.ErrNotFound) {
			// The block's receipts or traces are of another block now: the
			// chain moved while reading. Keep the blocks before it; the
			// next call reads it again.
			mu.Lock()
			cut = min(cut, i)
			mu.Unlock()
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	out = out[:cut]
	hits := 0
	for _, s := range out {
		if len(s.txs) > 0 {
			hits++
		}
	}
	if len(out) > 0 {
		r.mu.Lock()
		r.dense[pass] = 2*hits >= len(out)
		r.mu.Unlock()
	}
	return out, nil
}

// scanBlock reads what block b needs beyond its Transfer logs (given when
// sparse): its traces when api is set, the receipts of the transactions
// that touch a tracked address (all of them when dense, or when the fee
// recipient is tracked, whose income is the block's priority fees), and
// builds its transactions and movements. When the logs given are only
// those of tracked parties (filtered), a block they or anything else
// match is read whole (every receipt and Transfer log), so that each
// transaction comes with the transfers of all its parties. A block whose
// receipts show that no code ran in it (plainBlock) is not traced: its
// traces would be empty.
func (r *Reader) scanBlock(ctx context.Context, b query.SourceBlock, logs []query.TokenTransfer, dense, filtered bool, api string,
	tracked func(string) bool, out *scanned) error {
	var (
		all    []query.Receipt
		traced []query.InternalMove
		err    error
	)
	if dense {
		if all, logs, err = r.src.BlockReceipts(ctx, b.Block); err != nil {
			return err
		}
	}
	// whole reads every receipt of a block that matches, when only the
	// tracked parties' logs are in hand.
	whole := func(m matched) (matched, error) {
		if !filtered || all != nil || len(m.touched) == 0 {
			return m, nil
		}
		if all, logs, err = r.src.BlockReceipts(ctx, b.Block); err != nil {
			return m, err
		}
		return matchBlock(b, logs, traced, tracked), nil
	}
	m, err := whole(matchBlock(b, logs, nil, tracked))
	if err != nil {
		return err
	}
	if api != "" && !(all != nil && plainBlock(b, all)) {
		if traced, err = r.tracer.Traces(ctx, b, api); err != nil {
			return &chain.InternalsError{Err: fmt.Errorf("traces of block %d: %w", b.Number, err)}
		}
		if m, err = whole(matchBlock(b, logs, traced, tracked)); err != nil {
			return err
		}
	}
	var receipts []query.Receipt // of m.hashes, in order
	switch {
	case all == nil && m.miner:
		if all, _, err = r.src.BlockReceipts(ctx, b.Block); err != nil {
			return err
		}
	case all == nil && len(m.hashes) > 0:
		if receipts, err = r.src.Receipts(ctx, b.Block, m.hashes); err != nil {
			return err
		}
	}
	if all != nil {
		if receipts, err = pairReceipts(b, m.hashes, all); err != nil {
			return err
		}
	}
	out.block = b
	out.txs = m.transactions(b, receipts)
	out.moves = blockMoves(b, out.txs, all, tracked)
	out.touched = m.touched
	return nil
}

// plainGas is the gas a transaction without input, access list or
// authorizations is charged before any code runs (the EVM's base cost of
// a transaction).
const plainGas = 21_000

// plainBlock reports whether, by its receipts (all, every one of the
// block's), no code ran in block b: each of its transactions is a
// successful call without input to an existing address, of a type
// without authorizations (0 to 3), that used exactly plainGas. Every
// opcode that can move value (CALL, CREATE, SELFDESTRUCT) costs gas
// beyond it, and no refund brings a transaction back to its base cost
// (refunds are less than the gas the same transaction paid for what they
// refund), so such a block has no internal movement: its traces would
// be empty. A chain that charges another base cost never matches, and
// is traced.
func plainBlock(b query.SourceBlock, all []query.Receipt) bool {
	if len(all) != len(b.Txs) {
		return false
	}
	gas := make(map[string]query.Receipt, len(all))
	for _, r := range all {
		gas[r.TxHash] = r
	}
	for _, tx := range b.Txs {
		r, ok := gas[tx.Hash]
		if !ok || tx.To == "" || len(tx.Input) > 0 || tx.Type > 3 || tx.System ||
			r.Status != query.StatusSuccess || r.GasUsed != plainGas {
			return false
		}
	}
	return true
}

// activity is s in the seam's terms: each transaction's EVM fields are
// in its Detail document (TxDetail).
func (s scanned) activity() (chain.BlockActivity, error) {
	a := chain.BlockActivity{Block: s.block.Block, Txs: make([]chain.Tx, len(s.txs)), Moves: make([]chain.Move, len(s.moves))}
	for i, t := range s.txs {
		transfers := make([]chain.Transfer, len(t.Transfers))
		for j, tr := range t.Transfers {
			transfers[j] = chain.Transfer{Asset: tr.Asset, Holding: tr.Holding(), From: tr.From, To: tr.To, Amount: tr.Amount,
				Kind: tr.Kind, Ref: transferRef(tr), Error: tr.Error}
		}
		a.Txs[i] = chain.Tx{Hash: t.Hash, Index: t.Index, Status: t.Status, Payer: t.From, Fee: t.Fee,
			Parties: t.Addresses(), Transfers: transfers, Detail: t.Detail, Account: &s.txs[i]}
	}
	for i, m := range s.moves {
		a.Moves[i] = chain.Move{Address: m.address, Asset: m.asset, Holding: m.contract, Kind: m.cause.Kind,
			Tx: m.cause.TxHash, Ref: m.cause.Ref, Amount: m.cause.Amount, Fee: m.cause.Fee}
	}
	a.Touched = s.touched
	return a, nil
}
