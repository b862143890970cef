package query

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
			m := match(b, byBlock[b.Number], func(a string) bool { return set[a] })
			if len(m.hashes) == 0 {
				continue
			}
			receipts, err := s.Source.Receipts(ctx, b.Block, m.hashes)
			if err != nil {
				return nil, fmt.Errorf("backfill block %d: %w", b.Number, err)
			}
			out = append(out, m.transactions(b, receipts)...)
		}
		if n := uint64(len(blocks)); n < hi-lo+1 {
			break // the node has no more blocks
		}
	}
	return out, nil
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
