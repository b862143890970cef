package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// FillBlockTimes implements query.FetchStore: the block times of the
// chain's statement rows from their documents, and of its transaction
// rows from theirs (a row without a document, from before migration
// 0002, keeps none). A block at a time, through the indexes of migration
// 0070, a transaction a batch, fenced by ctx's lease as every fetcher
// write is; a block whose documents say no time is left as it is.
func (db *DB) FillBlockTimes(ctx context.Context, chain string) (int, error) {
	changes, err := db.fillUntimed(ctx, chain, "balance_changes", func(doc string) (time.Time, error) {
		c, err := parseChangeDoc(chain, "", doc)
		return c.Time, err
	})
	if err != nil {
		return changes, wrap("fill block times", err)
	}
	txs, err := db.fillUntimed(ctx, chain, "tx_addresses", func(doc string) (time.Time, error) {
		return readTxDoc(chain, doc, db.legacy).BlockTime, nil
	})
	return changes + txs, wrap("fill block times", err)
}

// untimedBatch is how many rows without a block time a fill reads at a
// time.
const untimedBatch = 1000

// fillUntimed fills the block_time of table's rows of chain without one,
// reading a block's time from its rows' documents with timeOf, and
// returns how many rows it filled.
func (db *DB) fillUntimed(ctx context.Context, chain, table string, timeOf func(doc string) (time.Time, error)) (int, error) {
	filled, after := 0, int64(-1)
	for {
		last := int64(-1)
		err := db.tx(ctx, func(tx bun.Tx) error {
			var blocks []untimedBlock
			var err error
			blocks, last, err = untimedBlocks(ctx, tx, chain, table, after, timeOf)
			if err != nil {
				return err
			}
			for _, b := range blocks {
				res, err := tx.ExecContext(ctx, "UPDATE "+table+" SET block_time = ? WHERE chain = ? AND block_number = ? AND block_time IS NULL",
					b.time.Unix(), chain, b.number)
				if err != nil {
					return fmt.Errorf("%s block %d: %w", table, b.number, err)
				}
				n, err := res.RowsAffected()
				if err != nil {
					return err
				}
				filled += int(n)
			}
			return nil
		})
		if err != nil || last < 0 {
			return filled, err
		}
		after = last
	}
}

type untimedBlock struct {
	number int64
	time   time.Time
}

// untimedBlocks reads a batch of table's rows without a block time after
// block after: the times of their blocks that a document tells, and the
// last block read (-1: none).
func untimedBlocks(ctx context.Context, tx bun.Tx, chain, table string, after int64, timeOf func(doc string) (time.Time, error)) ([]untimedBlock, int64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT block_number, doc FROM "+table+` WHERE chain = ? AND block_time IS NULL AND block_number > ?
		ORDER BY block_number LIMIT ?`, chain, after, untimedBatch)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var (
		out  []untimedBlock
		last = int64(-1)
	)
	for rows.Next() {
		var (
			number int64
			doc    sql.NullString
		)
		if err := rows.Scan(&number, &doc); err != nil {
			return nil, 0, err
		}
		last = number
		if !doc.Valid || len(out) > 0 && out[len(out)-1].number == number {
			continue
		}
		t, err := timeOf(doc.String)
		if err != nil {
			return nil, 0, fmt.Errorf("%s block %d: %w", table, number, err)
		}
		if !t.IsZero() {
			out = append(out, untimedBlock{number: number, time: t})
		}
	}
	return out, last, rows.Err()
}
