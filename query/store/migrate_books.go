package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// migrationFills are the steps of a migration that SQL alone does not
// write on both dialects, run in its transaction after its statements.
var migrationFills = map[int]func(ctx context.Context, tx bun.IDB, db *DB) error{
	35: func(ctx context.Context, tx bun.IDB, _ *DB) error { return fillBlockTimes(ctx, tx) },
	88: rewriteTxDocs,
	92: rewriteChangeDocs,
}

// unixTime is t as a block_time column: Unix seconds, NULL for the zero
// time.
func unixTime(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	s := t.Unix()
	return &s
}

// fillBlockTimes writes the block_time of the statement rows and the
// tx_addresses rows stored before migration 0035: a statement row's from
// its document, an address's transaction from its transaction's row. A
// block at a time: every row of a block has its time.
func fillBlockTimes(ctx context.Context, tx bun.IDB) error {
	type blockTime struct {
		chain string
		block uint64
		time  time.Time
	}
	// fill reads the times of the blocks after (chain, block) with next
	// and sets them with update, until next reads none.
	fill := func(what, update string, next func(chain string, block uint64) ([]blockTime, error)) error {
		chain, block := "", uint64(0)
		first := true
		for {
			bts, err := next(chain, block)
			if err != nil {
				return fmt.Errorf("fill %s block times: %w", what, err)
			}
			if len(bts) == 0 {
				return nil
			}
			for _, bt := range bts {
				if !first && bt.chain == chain && bt.block == block {
					continue
				}
				first, chain, block = false, bt.chain, bt.block
				if bt.time.IsZero() {
					continue
				}
				if _, err := tx.ExecContext(ctx, update, bt.time.Unix(), bt.chain, bt.block); err != nil {
					return fmt.Errorf("fill %s block times: %w", what, err)
				}
			}
		}
	}
	const size = 2000
	err := fill("statement", "UPDATE balance_changes SET block_time = ? WHERE chain = ? AND block_number = ? AND block_time IS NULL",
		func(chain string, block uint64) ([]blockTime, error) {
			rows, err := tx.QueryContext(ctx, `SELECT chain, block_number, doc FROM balance_changes
				WHERE block_time IS NULL AND (chain > ? OR chain = ? AND block_number > ?)
				ORDER BY chain, block_number LIMIT ?`, chain, chain, block, size)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []blockTime
			for rows.Next() {
				var (
					bt  blockTime
					doc string
				)
				if err := rows.Scan(&bt.chain, &bt.block, &doc); err != nil {
					return nil, err
				}
				c, err := parseChangeDoc(bt.chain, "", doc)
				if err != nil {
					return nil, err
				}
				bt.time = c.Time
				out = append(out, bt)
			}
			return out, rows.Err()
		})
	if err != nil {
		return err
	}
	return fill("transactions", "UPDATE tx_addresses SET block_time = ? WHERE chain = ? AND block_number = ? AND block_time IS NULL",
		func(chain string, block uint64) ([]blockTime, error) {
			var rows []struct {
				Chain string    `bun:"chain"`
				Block uint64    `bun:"block_number"`
				Time  time.Time `bun:"block_time"`
			}
			err := tx.NewRaw(`SELECT chain, block_number, block_time FROM transactions
				WHERE chain > ? OR chain = ? AND block_number > ?
				ORDER BY chain, block_number LIMIT ?`, chain, chain, block, size).Scan(ctx, &rows)
			if err != nil && err != sql.ErrNoRows {
				return nil, err
			}
			out := make([]blockTime, len(rows))
			for i, r := range rows {
				out[i] = blockTime{chain: r.Chain, block: r.Block, time: r.Time}
			}
			return out, nil
		})
}
