package query

// The backfill of new subscriptions over past blocks.

import (
	"context"
	"fmt"
)

// Backfiller finds the past transactions of addresses that were just
// subscribed. BlockScan reads them block by block from a Source; an
// Etherscan-compatible or an ots_ (Otterscan) index could answer the same
// question with fewer calls.
type Backfiller interface {
	// Backfill returns the transactions of blocks from to to (inclusive)
	// that touch one of addresses, with their receipts' status and fee.
	// Errors wrap ErrUnavailable when the source cannot be reached.
	Backfill(ctx context.Context, from, to uint64, addresses []string) ([]Transaction, error)
}

// BlockScan is the Backfiller that scans every block of the range through
// a Source: the Transfer logs filtered by the addresses, the blocks for
// native transfers, and receipts of what matched.
type BlockScan struct {
	Source Source
	// Chunk is the number of blocks read per round; default 256.
	Chunk uint64
}

var _ Backfiller = BlockScan{}

// Backfill scans blocks from to to for transactions touching addresses.
func (s BlockScan) Backfill(ctx context.Context, from, to uint64, addresses []string) ([]Transaction, error) {
	if to < from || len(addresses) == 0 {
		return nil, nil
	}
	chunk := s.Chunk
	if chunk == 0 {
		chunk = 256
	}
	set := make(map[string]bool, len(addresses))
	for _, a := range addresses {
		set[a] = true
	}
	var out []Transaction
	for lo := from; lo <= to; lo += chunk {
		hi := min(to, lo+chunk-1)
		logs, err := s.Source.Transfers(ctx, lo, hi, addresses)
		if err != nil {
			return nil, fmt.Errorf("backfill %d-%d: %w", lo, hi, err)
		}
		blocks, err := s.Source.Blocks(ctx, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("backfill %d-%d: %w", lo, hi, err)
		}
		byBlock := logsByBlock(logs)
		for _, b := range blocks {
			tracked := func(a string) bool { return set[a] }
			if m := match(b, byBlock[b.Number], tracked); len(m.hashes) == 0 {
				continue
			}
			// A match: the block's receipts, with every Transfer log in
			// it, so that each transaction is stored whole, with the
			// transfers of its other parties too.
			all, logs, err := s.Source.BlockReceipts(ctx, b.Block)
			if err != nil {
				return nil, fmt.Errorf("backfill block %d: %w", b.Number, err)
			}
			m := match(b, logs, tracked)
			byHash := make(map[string]Receipt, len(all))
			for _, r := range all {
				byHash[r.TxHash] = r
			}
			receipts := make([]Receipt, len(m.hashes))
			for i, h := range m.hashes {
				r, ok := byHash[h]
				if !ok {
					return nil, fmt.Errorf("backfill block %d %s: no receipt for %s: %w", b.Number, b.Hash, h, ErrUnavailable)
				}
				receipts[i] = r
			}
			out = append(out, m.transactions(b, receipts)...)
		}
		if n := uint64(len(blocks)); n < hi-lo+1 {
			break // the node has no more blocks
		}
	}
	return out, nil
}
