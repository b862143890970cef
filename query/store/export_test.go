package store

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// TransactionsJoined reads a page the way rows without a document are
// read, by joining transactions and transfers, for comparing the two.
func (db *DB) TransactionsJoined(ctx context.Context, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	return db.transactions(ctx, db.r, chain, address, after, limit)
}

// ExpireLease ends chain's lease now, as if its holder had stopped
// renewing it a whole TTL ago.
func (db *DB) ExpireLease(ctx context.Context, chain string) error {
	_, err := db.w.NewRaw("UPDATE fetch_leases SET expires_ms = 0 WHERE chain = ?", chain).Exec(ctx)
	return err
}

// HoldTx opens a write transaction under ctx (and so under its lease),
// then waits for release before it commits, as a fetcher frozen in the
// middle of a write would.
func (db *DB) HoldTx(ctx context.Context, opened chan<- struct{}, release <-chan struct{}) error {
	return db.tx(ctx, func(tx bun.Tx) error {
		close(opened)
		<-release
		_, err := tx.ExecContext(ctx, "SELECT 1")
		return err
	})
}

// ForgetBlockTimes sets every block_time to NULL, as in rows stored
// before migration 0035.
func (db *DB) ForgetBlockTimes(ctx context.Context) error {
	for _, q := range []string{"UPDATE balance_changes SET block_time = NULL", "UPDATE tx_addresses SET block_time = NULL"} {
		if _, err := db.w.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// FillBlockTimes runs migration 0035's fill again.
func (db *DB) FillBlockTimes(ctx context.Context) error {
	return db.tx(ctx, func(tx bun.Tx) error { return fillBlockTimes(ctx, tx) })
}
