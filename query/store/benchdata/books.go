package benchdata

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/wharfhq/wharf/query/store"
)

// BooksRows is the size of the books benchmarks' statement: 1,000,000
// rows, or WHARF_BENCH_ROWS (at least 1,000).
func BooksRows() (int, error) {
	v := os.Getenv("WHARF_BENCH_ROWS")
	if v == "" {
		return 1_000_000, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1000 {
		return 0, fmt.Errorf("benchdata: WHARF_BENCH_ROWS=%q: want a number of at least 1000", v)
	}
	return n, nil
}

// SeedBooks seeds db with the books benchmarks' data set for account:
// 100 addresses and 10,000 transactions, and a statement of rows rows
// for Address(1).
func SeedBooks(ctx context.Context, db *store.DB, account int64, rows int) error {
	return Seed(ctx, db, Config{Chain: "ETH", Account: account, Addresses: 100, Transactions: 10_000, HotEvery: 50, StatementRows: rows})
}
