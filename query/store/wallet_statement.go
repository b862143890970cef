package store

import (
	"context"
	"slices"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

var _ query.WalletStatementStore = (*DB)(nil)

// walletChanges reads the statement rows of a batch of addresses, those
// of each at or below a block, newest first, at most a number of each,
// and no lower than a block: the read AccountBalanceChanges pages make
// of one address, for many in one query.
const walletChanges = `SELECT w.address, w.doc FROM (
		SELECT c.address, c.doc, c.block_number, c.contract,
			ROW_NUMBER() OVER (PARTITION BY c.address ORDER BY c.block_number DESC, c.contract DESC) AS n
		FROM balance_changes AS c
		WHERE c.chain = ? AND c.address IN (?) AND c.block_number <= ?
		AND EXISTS (SELECT 1 FROM subscriptions AS s WHERE s.account_id = ? AND s.chain = c.chain AND s.address = c.address)
	) AS w WHERE w.n <= ? AND w.block_number >= ?
	ORDER BY w.address, w.block_number DESC, w.contract DESC`

// WalletBalanceChanges implements query.WalletStatementStore, in one
// query a batch of addresses.
func (db *DB) WalletBalanceChanges(ctx context.Context, account int64, chain string, addresses []string, from, to uint64, limit int, fn func(*query.BalanceChange) error) error {
	if limit <= 0 {
		return nil
	}
	// A block number is a signed 64-bit integer in the database.
	to = min(to, 1<<63-1)
	var c query.BalanceChange
	for part := range slices.Chunk(addresses, batch) {
		rows, err := db.r.QueryContext(ctx, walletChanges, chain, bun.List(part), int64(to), account, limit, int64(min(from, 1<<63-1)))
		if err != nil {
			return wrap("wallet balance changes", err)
		}
		for rows.Next() {
			var address, doc string
			if err := rows.Scan(&address, &doc); err != nil {
				rows.Close()
				return wrap("wallet balance changes", err)
			}
			if err := parseChangeDocInto(&c, chain, address, doc); err != nil {
				rows.Close()
				return wrap("wallet balance changes", err)
			}
			if err := fn(&c); err != nil {
				rows.Close()
				return err
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return wrap("wallet balance changes", err)
		}
	}
	return nil
}
