package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

type blockRow struct {
	Number     uint64
	Hash       string
	ParentHash string
	Time       time.Time `bun:",nullzero"`
}

func (r blockRow) block() query.Block {
	return query.Block{Number: r.Number, Hash: r.Hash, ParentHash: r.ParentHash, Time: utc(r.Time)}
}

// Checkpoint returns the last block stored for chain; ok is false when
// none is.
func (db *DB) Checkpoint(ctx context.Context, chain string) (b query.Block, ok bool, err error) {
	b, ok, err = db.checkpoint(ctx, db.r, chain)
	return b, ok, wrap("checkpoint", err)
}

func (db *DB) checkpoint(ctx context.Context, tx bun.IDB, chain string) (query.Block, bool, error) {
	var row blockRow
	err := tx.NewRaw("SELECT number, hash, parent_hash, time FROM checkpoints WHERE chain = ?", chain).Scan(ctx, &row)
	if isNoRows(err) {
		return query.Block{}, false, nil
	}
	if err != nil {
		return query.Block{}, false, err
	}
	return row.block(), true, nil
}

// StoredBlock returns the stored block at number. Errors: query.ErrNotFound.
func (db *DB) StoredBlock(ctx context.Context, chain string, number uint64) (query.Block, error) {
	b, err := db.storedBlock(ctx, db.r, chain, number)
	return b, wrap("stored block", err)
}

func (db *DB) storedBlock(ctx context.Context, tx bun.IDB, chain string, number uint64) (query.Block, error) {
	var row blockRow
	err := tx.NewRaw("SELECT number, hash, parent_hash, time FROM blocks WHERE chain = ? AND number = ?",
		chain, number).Scan(ctx, &row)
	return row.block(), err
}

// StoreBlock stores the matched transactions and fresh balances of block b
// and moves the checkpoint to b, all in one database transaction.
func (db *DB) StoreBlock(ctx context.Context, chain string, b query.Block, txs []query.Transaction, balances []query.Balance) error {
	return db.StoreBlocks(ctx, chain, []query.BlockData{{Block: b, Txs: txs, Balances: balances}})
}

// StoreBlocks stores consecutive blocks with their matched transactions
// and fresh balances and moves the checkpoint to the last of them, all in
// one database transaction. Rows of the whole batch go in multi-row
// statements, so a batch costs a few statements and one commit.
func (db *DB) StoreBlocks(ctx context.Context, chain string, blocks []query.BlockData) error {
	if len(blocks) == 0 {
		return nil
	}
	var (
		txs      []query.Transaction
		balances []query.Balance
		changes  []query.BalanceChange
		heads    []query.StatementHead
	)
	for _, b := range blocks {
		txs = append(txs, b.Txs...)
		balances = append(balances, b.Balances...)
		changes = append(changes, b.Changes...)
		heads = append(heads, b.Heads...)
	}
	if err := validate(txs, balances); err != nil {
		return wrap("store blocks", err)
	}
	if err := db.prepareWrites(ctx); err != nil {
		return wrap("store blocks", err)
	}
	heads = lastHeads(heads)
	q := db.newQuarantine()
	return wrap("store blocks", db.tell(q, db.eventTx(ctx, func(tx bun.Tx) error {
		if err := db.putBlocks(ctx, tx, chain, blocks); err != nil {
			return err
		}
		if err := db.putTransactions(ctx, tx, chain, txs, q); err != nil {
			return err
		}
		if err := db.putBalances(ctx, tx, balances, q); err != nil {
			return err
		}
		if err := db.putStatement(ctx, tx, chain, changes, heads); err != nil {
			return err
		}
		return db.setCheckpoint(ctx, tx, chain, blocks[len(blocks)-1].Block)
	})))
}

// lastHeads keeps the last of the heads of each asset (one statement may
// not update a row twice).
func lastHeads(heads []query.StatementHead) []query.StatementHead {
	type key struct{ a, c string }
	at := make(map[key]int, len(heads))
	var out []query.StatementHead
	for _, h := range heads {
		k := key{h.Address, h.Contract}
		if i, ok := at[k]; ok {
			out[i] = h
			continue
		}
		at[k] = len(out)
		out = append(out, h)
	}
	return out
}

// putBlocks upserts the blocks' numbers, hashes and parents.
func (db *DB) putBlocks(ctx context.Context, tx bun.IDB, chain string, blocks []query.BlockData) error {
	args := make([]any, 0, 5*len(blocks))
	for _, b := range blocks {
		args = append(args, chain, b.Number, b.Hash, b.ParentHash, b.Time)
	}
	if err := db.insert(ctx, tx, blocksInsert, args, nil); err != nil {
		return fmt.Errorf("blocks: %w", err)
	}
	return nil
}

var blocksInsert = &insertSpec{into: "blocks (chain, number, hash, parent_hash, time)", width: 5,
	conflict: "ON CONFLICT (chain, number) DO UPDATE SET hash = excluded.hash, parent_hash = excluded.parent_hash, time = excluded.time"}

func (db *DB) setCheckpoint(ctx context.Context, tx bun.IDB, chain string, b query.Block) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (chain, number, hash, parent_hash, time) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (chain) DO UPDATE SET number = excluded.number, hash = excluded.hash,
		parent_hash = excluded.parent_hash, time = excluded.time`,
		chain, b.Number, b.Hash, b.ParentHash, nullTime(b.Time))
	return err
}

// nullTime is nil for the zero time, so that it is stored as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// Rewind removes every transaction, block and statement row stored above
// number (a reorg) and moves the checkpoint back to number, in one
// transaction. Balances are kept: the fetcher reads them again.
func (db *DB) Rewind(ctx context.Context, chain string, number uint64) error {
	return wrap("rewind", db.eventTx(ctx, func(tx bun.Tx) error { return db.rewind(ctx, tx, chain, number) }))
}

func (db *DB) rewind(ctx context.Context, tx bun.IDB, chain string, number uint64) error {
	// Every statement row about to go is retracted in the feed (event.go).
	if err := db.retractEvents(ctx, tx, chain, number); err != nil {
		return err
	}
	if err := db.lowerFinality(ctx, tx, chain, number); err != nil {
		return err
	}
	stmts := []struct {
		q    string
		args []any
	}{
		{"DELETE FROM tx_addresses WHERE chain = ? AND block_number > ?", []any{chain, number}},
		{"DELETE FROM transfers WHERE chain = ? AND hash IN (SELECT hash FROM transactions WHERE chain = ? AND block_number > ?)",
			[]any{chain, chain, number}},
		{"DELETE FROM transactions WHERE chain = ? AND block_number > ?", []any{chain, number}},
		{"DELETE FROM blocks WHERE chain = ? AND number > ?", []any{chain, number}},
		// The statements above the fork go; those that stood above it
		// start again from the node's balance (the fetcher reads it).
		{"DELETE FROM balance_changes WHERE chain = ? AND block_number > ?", []any{chain, number}},
		{"DELETE FROM statement_heads WHERE chain = ? AND block_number > ?", []any{chain, number}},
		// An address synced above the fork whose backfill has stored
		// nothing yet lost the balance its statement was to chain down
		// from: it is synced again, at the new checkpoint.
		{`UPDATE tracked SET needs_sync = TRUE, history_start = NULL, backfill_low = NULL, backfill_next = NULL
			WHERE chain = ? AND active AND NOT needs_sync AND synced_to > ? AND backfill_next = synced_to AND history_start = synced_to + 1`,
			[]any{chain, number}},
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
			return err
		}
	}
	b, err := db.storedBlock(ctx, tx, chain, number)
	if isNoRows(err) {
		// The fork point is below the first stored block: keep its number.
		b, err = query.Block{Number: number}, nil
	}
	if err != nil {
		return err
	}
	return db.setCheckpoint(ctx, tx, chain, b)
}
