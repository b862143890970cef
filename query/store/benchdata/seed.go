// Package benchdata fills an address-data database with a large,
// deterministic data set for benchmarks: many subscribed addresses, a
// million transactions, balances, and one hot address with a long
// history. The rows are generated inside the database (generate_series
// on PostgreSQL, a recursive CTE on SQLite), so loading is bounded by the
// database, not by round trips.
package benchdata

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wharfhq/wharf/query/store"
)

// Config sizes the data set.
type Config struct {
	Chain        string
	Account      int64 // the account subscribed to every address
	Addresses    int   // subscribed addresses, Address(1) to Address(Addresses)
	Transactions int   // transactions, 100 a block
	// HotEvery sends every HotEvery-th transaction from Address(1), so it
	// has Transactions/HotEvery transactions more than the others.
	HotEvery int
	// StatementRows gives Address(1) a statement of that many rows.
	StatementRows int
}

// Address is the k-th generated address.
func Address(k int) string { return fmt.Sprintf("0x%040x", k) }

// dialect holds the SQL spellings that differ.
type dialect struct {
	series func(from, to string) string // a FROM item yielding g.i
	addr   func(expr string) string
	hash   func(expr string) string
	time   func(expr string) string
	field  func(expr string) string // a field of a transaction document
}

var (
	postgres = dialect{
		series: func(from, to string) string { return fmt.Sprintf("generate_series(%s::bigint, %s) AS g(i)", from, to) },
		addr:   func(e string) string { return fmt.Sprintf("'0x' || lpad(to_hex(%s), 40, '0')", e) },
		hash:   func(e string) string { return fmt.Sprintf("'0x' || lpad(to_hex(%s), 64, '0')", e) },
		time:   func(e string) string { return fmt.Sprintf("to_timestamp(%s)", e) },
		field:  func(e string) string { return fmt.Sprintf("octet_length((%s)::text) || ':' || (%s)::text", e, e) },
	}
	sqlite = dialect{
		series: func(from, to string) string {
			return fmt.Sprintf("(WITH RECURSIVE s(i) AS (SELECT %s UNION ALL SELECT i + 1 FROM s WHERE i < %s) SELECT i FROM s) AS g", from, to)
		},
		addr:  func(e string) string { return fmt.Sprintf("printf('0x%%040x', %s)", e) },
		hash:  func(e string) string { return fmt.Sprintf("printf('0x%%064x', %s)", e) },
		time:  func(e string) string { return fmt.Sprintf("datetime(%s, 'unixepoch')", e) },
		field: func(e string) string { return fmt.Sprintf("length(CAST((%s) AS BLOB)) || ':' || (%s)", e, e) },
	}
)

// Seed loads the data set into db, which must be empty of it.
func Seed(ctx context.Context, db *store.DB, c Config) error {
	now := time.Now().UTC().Format("2006-01-02 15:04:05")
	for _, s := range statements(db.Postgres(), c, now) {
		if _, err := db.Bun().ExecContext(ctx, s); err != nil {
			return fmt.Errorf("benchdata: %.40s: %w", strings.Join(strings.Fields(s), " "), err)
		}
	}
	return nil
}

// statements are the statements that seed c, at time now, on PostgreSQL
// or SQLite.
func statements(pg bool, c Config, now string) []string {
	d := sqlite
	if pg {
		d = postgres
	}
	n, m := c.Addresses, c.Transactions
	from := fmt.Sprintf("CASE WHEN g.i %% %d = 0 THEN %s ELSE %s END", c.HotEvery, d.addr("1"), d.addr(fmt.Sprintf("1 + g.i %% %d", n)))
	to := d.addr(fmt.Sprintf("1 + (g.i * 7 + 3) %% %d", n))
	// The document of transaction g.i (see the store's txdoc.go), as the
	// fetcher writes it (version 6, its strings plain): its fields, a fee of one part, no
	// other party, the EVM family's detail document, then its one native
	// transfer.
	detail := `'{"nonce":' || g.i || ',"type":2,"gas_limit":21000,"gas_used":21000,"effective_gas_price":"1000000000",` +
		`"method":"","contract_address":"","input":"0x","cumulative_gas_used":' || ((g.i % 100 + 1) * 21000) || ',"revert_reason":""}'`
	var doc []string
	for _, f := range []string{"'6'", "'1'", d.hash("g.i"), "g.i / 100", d.hash("g.i / 100"), "(1700000000 + (g.i / 100) * 12) * 1000000000",
		"g.i % 100", "'success'", from, to, "'1000000000000000000'", "'21000000000000'", "'0'", "'0'", "'0'", "'0'", "'0'", "0", detail,
		"-1", "'native'", "''", from, to, "'1000000000000000000'", "'transaction'", "'ETH'", "18", "'Ether'", "''", "''", "''", "''"} {
		doc = append(doc, d.field(f))
	}
	docExpr := strings.Join(doc, " || ")
	// The statement of the hot address (see the store's statement.go):
	// a row a block from block 1 up, native and a token alternating, each
	// with its transaction and fee. Every other address has the one row of
	// its first balance, at block 1, as the fetcher writes at a first sync:
	// the planner's estimate of an address's rows is then what it is in a
	// real database (with the hot address's rows alone it took 20,000 rows
	// an address, and PostgreSQL planned every statement page again).
	contract := "CASE WHEN g.i % 2 = 0 THEN '0x00000000000000000000000000000000000000c0' ELSE '' END"
	changeDoc := func(block, contract string) string {
		var change []string
		for _, f := range []string{"'1'", block, "1700000000 + " + block + " * 12", contract, "1000000 + " + block, block + " * 1000000", "'1'", "''", "'1'",
			"'transaction'", d.hash(block), "1000021 + " + block, "'fee'", d.hash(block), "'-21'"} {
			change = append(change, d.field(f))
		}
		return strings.Join(change, " || ")
	}
	stmts := []string{
		fmt.Sprintf(`INSERT INTO subscriptions (account_id, chain, address, created)
			SELECT %d, '%s', %s, '%s' FROM %s`, c.Account, c.Chain, d.addr("g.i"), now, d.series("1", fmt.Sprint(n))),
		fmt.Sprintf(`INSERT INTO tracked (chain, address, active, needs_sync, sync_from, history_start)
			SELECT '%s', %s, TRUE, FALSE, 0, 0 FROM %s`, c.Chain, d.addr("g.i"), d.series("1", fmt.Sprint(n))),
		fmt.Sprintf(`INSERT INTO balances (chain, address, contract, asset, symbol, decimals, amount, block_number, updated)
			SELECT '%s', %s, '', 'native', 'ETH', 18, '1000000000000000000', 1, '%s' FROM %s`,
			c.Chain, d.addr("g.i"), now, d.series("1", fmt.Sprint(n))),
		fmt.Sprintf(`INSERT INTO balances (chain, address, contract, asset, symbol, decimals, amount, block_number, updated)
			SELECT '%s', %s, '0x00000000000000000000000000000000000000ff', 'erc20', 'DEMO', 6, '123456789', 1, '%s' FROM %s`,
			c.Chain, d.addr("g.i"), now, d.series("1", fmt.Sprint(n))),
		fmt.Sprintf(`INSERT INTO transactions (chain, hash, block_number, block_hash, block_time, tx_index, status,
			from_address, to_address, value, fee, nonce)
			SELECT '%s', %s, g.i / 100, %s, %s, g.i %% 100, 'success', %s, %s, '1000000000000000000', '21000000000000', g.i
			FROM %s`, c.Chain, d.hash("g.i"), d.hash("g.i / 100"), d.time("1700000000 + (g.i / 100) * 12"), from, to,
			d.series("0", fmt.Sprint(m-1))),
		fmt.Sprintf(`INSERT INTO transfers (chain, hash, log_index, asset, contract, from_address, to_address, amount)
			SELECT '%s', %s, -1, 'native', '', %s, %s, '1000000000000000000' FROM %s`,
			c.Chain, d.hash("g.i"), from, to, d.series("0", fmt.Sprint(m-1))),
		fmt.Sprintf(`INSERT INTO tx_addresses (chain, address, block_number, tx_index, hash, doc, block_time)
			SELECT '%s', %s, g.i / 100, g.i %% 100, %s, %s, 1700000000 + (g.i / 100) * 12 FROM %s`, c.Chain, from, d.hash("g.i"), docExpr, d.series("0", fmt.Sprint(m-1))),
		fmt.Sprintf(`INSERT INTO tx_addresses (chain, address, block_number, tx_index, hash, doc, block_time)
			SELECT '%s', %s, g.i / 100, g.i %% 100, %s, %s, 1700000000 + (g.i / 100) * 12 FROM %s WHERE %s <> %s ON CONFLICT DO NOTHING`,
			c.Chain, to, d.hash("g.i"), docExpr, d.series("0", fmt.Sprint(m-1)), to, from),
	}
	if c.StatementRows > 0 {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO balance_changes (chain, address, block_number, contract, doc, block_time)
			SELECT '%s', %s, g.i, %s, %s, 1700000000 + g.i * 12 FROM %s`, c.Chain, d.addr("1"), contract, changeDoc("g.i", contract), d.series("1", fmt.Sprint(c.StatementRows))),
			fmt.Sprintf(`INSERT INTO balance_changes (chain, address, block_number, contract, doc, block_time)
			SELECT '%s', %s, 1, '', %s, 1700000000 + 12 FROM %s`, c.Chain, d.addr("g.i"), changeDoc("1", "''"), d.series("2", fmt.Sprint(n))))
	}
	if pg {
		// As autovacuum would; sets the visibility map too, so that pages
		// are index-only scans. SQLite is left without statistics, as
		// addrd leaves it: with ANALYZE's sqlite_stat4, SQLite compiles a
		// statement again whenever a parameter bound in its WHERE changes
		// (every read), which doubled the cost of parsing and planning.
		stmts = append(stmts, "VACUUM ANALYZE")
	}
	return stmts
}
