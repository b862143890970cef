package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/wharfhq/wharf/query"
)

// The transactions page is the API's hottest read. It is one range read
// of tx_addresses, whose rows carry their transaction's document (see
// txdoc.go), through prepared statements on PostgreSQL (prepared.go): no
// query is built, parsed or planned per request, and no reflection scans
// the rows. A requester's page checks the subscription in the same
// statement: an uncorrelated EXISTS, which both databases evaluate once.
const (
	txPageFirst = `SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2
		ORDER BY block_number DESC, tx_index DESC LIMIT $3`
	txPageAfter = `SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2 AND (block_number, tx_index) < ($3, $4)
		ORDER BY block_number DESC, tx_index DESC LIMIT $5`
	accountTxPageFirst = `SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2
		AND block_number >= ` + coveredFrom + `
		AND EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $4 AND chain = $1 AND address = $2)
		ORDER BY block_number DESC, tx_index DESC LIMIT $3`
	accountTxPageAfter = `SELECT doc FROM tx_addresses WHERE chain = $1 AND address = $2 AND (block_number, tx_index) < ($3, $4)
		AND block_number >= ` + coveredFrom + `
		AND EXISTS (SELECT 1 FROM subscriptions WHERE account_id = $6 AND chain = $1 AND address = $2)
		ORDER BY block_number DESC, tx_index DESC LIMIT $5`
)

// coveredFrom is the first block of the address's covered range (none
// before its first sync): a requester sees exactly the address's
// transactions from its history start to the stored head, never one stored
// earlier because another requester tracked a counterparty.
const coveredFrom = `COALESCE((SELECT history_start FROM tracked WHERE chain = $1 AND address = $2), 9223372036854775807)`

// errNoDoc reports a page row written before migration 0002.
var errNoDoc = errors.New("row without a transaction document")

// AccountTransactions is Transactions for a requester, who must be
// subscribed to address.
func (db *DB) AccountTransactions(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	if limit <= 0 {
		return nil, wrap("transactions", db.readable(ctx, account, chain, address))
	}
	q, args := accountTxPageFirst, []any{chain, address, limit, account}
	if after != nil {
		q, args = accountTxPageAfter, []any{chain, address, after.BlockNumber, after.Index, limit, account}
	}
	txs, err := db.transactionPage(ctx, chain, q, args, limit)
	if errors.Is(err, errNoDoc) {
		if err = db.readable(ctx, account, chain, address); err == nil {
			txs, err = db.transactions(ctx, db.r, chain, address, after, limit)
		}
	}
	if err == nil && len(txs) == 0 {
		// Nothing: no transactions, or no subscription.
		err = db.readable(ctx, account, chain, address)
	}
	return txs, wrap("transactions", err)
}

// transactionPage reads a page of documents with q; errNoDoc when a row
// has none, and the caller reads the page by joins instead.
func (db *DB) transactionPage(ctx context.Context, chain, q string, args []any, limit int) ([]query.Transaction, error) {
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
