package fetch

// Reading past blocks for a backfill: one block whole, or every block of a
// range.

import (
	"context"
	"fmt"
	"time"

	"github.com/wharfhq/wharf/internal/parallel"
	"github.com/wharfhq/wharf/query"
)

// pastBlock is what a backfill found in one block: the transactions that
// touch the backfilled addresses, each whole, and the movements of their
// balances (moves.go), from which their statement rows are made.
type pastBlock struct {
	number uint64
	time   time.Time
	txs    []query.Transaction
	moves  []move
	// touched are the backfilled addresses the block touches: a party of
	// one of its transactions, its movements, withdrawals or fees.
	touched []string
	traced  bool // the block's internal movements were read
}

// pastReader reads past blocks for a backfill through a Source, with
// their internal movements when trace is set.
type pastReader struct {
	src   query.Source
	trace func(context.Context, query.SourceBlock) ([]query.InternalMove, error)
}

// block reads what block b holds for set. logs are b's Transfer logs
// that involve set (all of them will do): a block that nothing touches
// (no transaction, log, internal movement, withdrawal or fee income of an
// address of set) costs no more calls; one that something touches is
// read whole (every receipt, every Transfer log), so that each
// transaction is stored with the transfers of all its parties.
func (r pastReader) block(ctx context.Context, b query.SourceBlock, logs []query.TokenTransfer, set map[string]bool) (pastBlock, error) {
	out := pastBlock{number: b.Number, time: b.Time, traced: r.trace != nil}
	var traced []query.InternalMove
	if r.trace != nil {
		var err error
		if traced, err = r.trace(ctx, b); err != nil {
			return out, fmt.Errorf("traces of block %d: %w", b.Number, err)
		}
	}
	tracked := func(a string) bool { return set[a] }
	if len(matchBlock(b, logs, traced, tracked).touched) == 0 {
		return out, nil
	}
	all, logs, err := r.src.BlockReceipts(ctx, b.Block)
	if err != nil {
		return out, fmt.Errorf("receipts of block %d: %w", b.Number, err)
	}
	m := matchBlock(b, logs, traced, tracked)
	receipts, err := pairReceipts(b, m.hashes, all)
	if err != nil {
		return out, err
	}
	out.txs = m.transactions(b, receipts)
	out.moves = blockMoves(b, out.txs, all, tracked)
	out.touched = m.touched
	return out, nil
}

// scan reads every block from to to: the Transfer logs involving
// addresses in one call per chunk of blocks, the blocks, their traces
// when r traces, and whole the blocks that touch addresses. It returns
// the blocks that hold something for them, oldest first.
func (r pastReader) scan(ctx context.Context, from, to uint64, addresses []string, chunk uint64) ([]pastBlock, error) {
	if to < from || len(addresses) == 0 {
		return nil, nil
	}
	if chunk == 0 {
		chunk = 256
	}
	set := make(map[string]bool, len(addresses))
	for _, a := range addresses {
		set[a] = true
	}
	var out []pastBlock
	for lo := from; lo <= to; lo += chunk {
		hi := min(to, lo+chunk-1)
		logs, err := r.src.Transfers(ctx, lo, hi, addresses)
		if err != nil {
			return nil, fmt.Errorf("scan %d-%d: %w", lo, hi, err)
		}
		blocks, err := r.src.Blocks(ctx, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("scan %d-%d: %w", lo, hi, err)
		}
		byBlock := logsByBlock(logs)
		found := make([]pastBlock, len(blocks))
		err = parallel.Do(ctx, len(blocks), 4, func(ctx context.Context, i int) error {
			var err error
			found[i], err = r.block(ctx, blocks[i], byBlock[blocks[i].Number], set)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("scan %d-%d: %w", lo, hi, err)
		}
		for _, p := range found {
			if len(p.txs) > 0 || len(p.moves) > 0 {
				out = append(out, p)
			}
		}
		if n := uint64(len(blocks)); n < hi-lo+1 {
			break // the node has no more blocks
		}
	}
	return out, nil
}

// BlockScan finds the past transactions of addresses by reading every
// block of a range through a Source: the Transfer logs filtered by the
// addresses, the blocks for native transfers, and receipts of what
// matched. It is what a window backfill does on a node without the state
// of its blocks (without traces), and the reference the full-history
// search is measured against.
type BlockScan struct {
	Source query.Source
	// Chunk is the number of blocks read per round; default 256.
	Chunk uint64
}

// Backfill returns the transactions of blocks from to to (inclusive)
// that touch one of addresses, with their receipts' status and fee.
// Errors wrap ErrUnavailable when the source cannot be reached.
func (s BlockScan) Backfill(ctx context.Context, from, to uint64, addresses []string) ([]query.Transaction, error) {
	found, err := pastReader{src: s.Source}.scan(ctx, from, to, addresses, s.Chunk)
	if err != nil {
		return nil, fmt.Errorf("backfill %d-%d: %w", from, to, err)
	}
	var out []query.Transaction
	for _, p := range found {
		out = append(out, p.txs...)
	}
	return out, nil
}
