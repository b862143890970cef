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
