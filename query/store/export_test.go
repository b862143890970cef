package store

import (
	"context"

	"github.com/wharfhq/wharf/query"
)

// TransactionsJoined reads a page the way rows without a document are
// read, by joining transactions and transfers, for comparing the two.
func (db *DB) TransactionsJoined(ctx context.Context, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	return db.transactions(ctx, db.r, chain, address, after, limit)
}
