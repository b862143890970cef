package evm

import (
	"context"
	"fmt"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain"
)

// BlockScan finds the past transactions of addresses by reading every
// block of a range through a Source: the Transfer logs filtered by the
// addresses, the blocks for native transfers, and receipts of what
// matched (Activity, without traces). It is what a window backfill does
// on a node without the state of its blocks, and the reference History
// is measured against.
type BlockScan struct {
	Source query.Source
	// Chunk is the number of blocks read per round; default 256.
	Chunk uint64
}

// Backfill returns the transactions of blocks from to to (inclusive)
// that touch one of addresses, with their receipts' status and fee.
// Errors wrap ErrUnavailable when the source cannot be reached.
func (s BlockScan) Backfill(ctx context.Context, from, to uint64, addresses []string) ([]query.Transaction, error) {
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
	r := NewReader(s.Source)
	var out []query.Transaction
	for lo := from; lo <= to; {
		hi := min(to, lo+chunk-1)
		acts, err := r.Activity(ctx, chain.Query{From: lo, To: hi, Tracked: set, Pass: "scan"})
		if err != nil {
			return nil, fmt.Errorf("backfill %d-%d: %w", from, to, err)
		}
		if len(acts) == 0 {
			break // the node has no more blocks
		}
		for _, a := range acts {
			for _, tx := range a.Txs {
				out = append(out, *tx.Account)
			}
		}
		lo += uint64(len(acts))
	}
	return out, nil
}
