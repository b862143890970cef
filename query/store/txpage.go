package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/wharfhq/wharf/query"
)

// The transactions page is the API's hottest read. It is one range read
// of tx_addresses, whose rows carry their transaction's document (see
// txdoc.go), through prepared statements on PostgreSQL (prepared.go): no query is built,
// parsed or planned per request, and no reflection scans the rows.
const (
	txPageFirst = `SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2
		ORDER BY block_number DESC, tx_index DESC LIMIT $3`
	txPageAfter = `SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2 AND (block_number, tx_index) < ($3, $4)
		ORDER BY block_number DESC, tx_index DESC LIMIT $5`
)

// errNoDoc reports a page row written before migration 0002.
var errNoDoc = errors.New("row without a transaction document")

// transactionPage reads a page from the documents; errNoDoc when a row
// has none, and the caller reads the page by joins instead.
func (db *DB) transactionPage(ctx context.Context, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	q, args := txPageFirst, []any{chain, address, limit}
	if after != nil {
		q, args = txPageAfter, []any{chain, address, after.BlockNumber, after.Index, limit}
	}
	rows, err := db.queryHot(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	txs := make([]query.Transaction, 0, min(limit, 64))
	var doc sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		if doc == nil {
			return nil, errNoDoc
		}
		t, err := parseTxDoc(chain, doc)
		if err != nil {
			return nil, err
		}
		txs = append(txs, t)
	}
	return txs, rows.Err()
}
