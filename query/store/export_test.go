package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// TransactionsJoined reads a page the way rows without a document are
// read, by joining transactions and transfers, for comparing the two.
func (db *DB) TransactionsJoined(ctx context.Context, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	return db.transactions(ctx, db.r, chain, address, after, 0, limit, false)
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

// ForgetTxDocuments drops the documents of the transactions in every
// other block (even block numbers), in tx_addresses and in transactions,
// as rows written before migrations 0002 and 0003 have none.
func (db *DB) ForgetTxDocuments(ctx context.Context) error {
	for _, q := range []string{"UPDATE tx_addresses SET doc = NULL WHERE block_number % 2 = 0",
		"UPDATE transactions SET doc = NULL WHERE block_number % 2 = 0"} {
		if _, err := db.w.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// PlainPagePlans runs the plain statement page of address (the first
// page, the API's default size) n times as a prepared statement on one
// PostgreSQL connection, as the store runs it, and returns how many of
// the runs were planned for their parameters (custom plans) and how many
// ran the generic plan.
func (db *DB) PlainPagePlans(ctx context.Context, account int64, chain, address string, n int) (custom, generic int64, err error) {
	conn, err := db.r.DB.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	q, args := changeRangeQuery(db.postgres, account, chain, address, query.Range{}, nil, 51)
	stmt, err := conn.PrepareContext(ctx, q)
	if err != nil {
		return 0, 0, err
	}
	defer stmt.Close()
	for range n {
		rows, err := stmt.QueryContext(ctx, args...)
		if err != nil {
			return 0, 0, err
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			return 0, 0, err
		}
	}
	err = conn.QueryRowContext(ctx, "SELECT custom_plans, generic_plans FROM pg_prepared_statements WHERE statement = $1", q).Scan(&custom, &generic)
	return custom, generic, err
}

// FillMigrationBlockTimes runs migration 0035's fill again.
func (db *DB) FillMigrationBlockTimes(ctx context.Context) error {
	return db.tx(ctx, func(tx bun.Tx) error { return fillBlockTimes(ctx, tx) })
}

// ExplainBooks returns the query plans of the books reads of address:
// the statement's first page, a range of one asset oldest first after a
// cursor, a time range, the transactions in a time range, the balances
// as of a block and as of a time.
func (db *DB) ExplainBooks(ctx context.Context, account int64, chain, address, contract string) (map[string]string, error) {
	from := time.Unix(1_700_000_000+12*100, 0)
	reads := map[string]func() (string, []any){
		"statement first page": func() (string, []any) {
			return changeRangeQuery(db.postgres, account, chain, address, query.Range{}, nil, 51)
		},
		"statement range, one asset, oldest first, after a cursor": func() (string, []any) {
			return changeRangeQuery(db.postgres, account, chain, address, query.Range{FromBlock: 100, ToBlock: 900_000, HasToBlock: true,
				Contract: contract, HasContract: true, Ascending: true}, &query.ChangeCursor{Block: 500_000, Contract: contract}, 51)
		},
		"statement time range": func() (string, []any) {
			return changeRangeQuery(db.postgres, account, chain, address, query.Range{FromTime: from, ToTime: from.Add(30 * 24 * time.Hour)}, nil, 51)
		},
		"transactions time range": func() (string, []any) {
			return txRangeQuery(db.postgres, account, chain, address, query.Range{FromTime: from, ToTime: from.Add(30 * 24 * time.Hour)}, nil, 51)
		},
		"balances as of a block": func() (string, []any) {
			return balancesAtBlock + db.balancesRest(), []any{account, chain, address, 500_000}
		},
		"balances as of a time": func() (string, []any) {
			return balancesAtTime + db.balancesRest(), []any{account, chain, address, from.Unix()}
		},
	}
	reads["export batch (oldest first, after a cursor)"] = func() (string, []any) {
		return changeRangeQuery(db.postgres, account, chain, address, query.Range{Ascending: true, ToBlock: 900_000, HasToBlock: true},
			&query.ChangeCursor{Block: 500_000, Contract: ""}, 2001)
	}
	out := map[string]string{}
	if db.postgres {
		// The plans of the prepared statements, as the store runs them:
		// PostgreSQL's generic plan once a statement ran five times.
		conn, err := db.r.DB.Conn(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
			return nil, err
		}
		for name, read := range reads {
			q, args := read()
			if _, err := conn.ExecContext(ctx, "PREPARE p AS "+q); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			var b strings.Builder
			lits := make([]string, len(args))
			for i, a := range args {
				lits[i] = fmt.Sprintf("'%v'", a)
			}
			rows, err := conn.QueryContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE p("+strings.Join(lits, ", ")+")")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			for rows.Next() {
				var line string
				rows.Scan(&line)
				fmt.Fprintln(&b, line)
			}
			rows.Close()
			conn.ExecContext(ctx, "DEALLOCATE p")
			out[name+" (generic plan)"] = b.String()
		}
	}
	for name, read := range reads {
		q, args := read()
		explain := "EXPLAIN QUERY PLAN "
		if db.postgres {
			explain = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
		}
		rows, err := db.r.DB.QueryContext(ctx, explain+q, args...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var b strings.Builder
		for rows.Next() {
			if db.postgres {
				var line string
				if err := rows.Scan(&line); err != nil {
					return nil, err
				}
				fmt.Fprintln(&b, line)
				continue
			}
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "%d %d %s\n", id, parent, detail)
		}
		rows.Close()
		out[name] = b.String()
	}
	return out, nil
}

// DamageTxDoc replaces the document of transaction hash, in its
// transactions row and its tx_addresses rows, by doc: a row an older
// addrd wrote damaged.
func (db *DB) DamageTxDoc(ctx context.Context, chain, hash, doc string) error {
	for _, table := range []string{"transactions", "tx_addresses"} {
		if _, err := db.w.NewRaw("UPDATE "+table+" SET doc = ? WHERE chain = ? AND hash = ?", doc, chain, hash).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
