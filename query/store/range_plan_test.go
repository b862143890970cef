package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// BenchmarkBooksPlans prints the query plans of the books reads over an
// address with 1,000,000 statement rows (WHARF_BENCH_ROWS), on
// PostgreSQL (EXPLAIN ANALYZE, after VACUUM ANALYZE) and SQLite (EXPLAIN
// QUERY PLAN, without ANALYZE, as addrd runs it). No figure: the plans
// are what docs/addrd.md shows.
func BenchmarkBooksPlans(b *testing.B) {
	rows := 1_000_000
	if v := os.Getenv("WHARF_BENCH_ROWS"); v != "" {
		rows, _ = strconv.Atoi(v)
	}
	for _, d := range testenv.DBs() {
		b.Run(d.Name, func(b *testing.B) {
			ctx := context.Background()
			db, err := store.Open(ctx, d.DSN(b))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			key, _, _ := db.CreateAPIKey(ctx, "bench")
			if err := benchdata.Seed(ctx, db, benchdata.Config{Chain: "ETH", Account: key.AccountID, Addresses: 100,
				Transactions: 10_000, HotEvery: 50, StatementRows: rows}); err != nil {
				b.Fatal(err)
			}
			plans, err := db.ExplainBooks(ctx, key.AccountID, "ETH", benchdata.Address(1), "0x00000000000000000000000000000000000000c0")
			if err != nil {
				b.Fatal(err)
			}
			for _, name := range slices.Sorted(func(yield func(string) bool) {
				for k := range plans {
					if !yield(k) {
						return
					}
				}
			}) {
				fmt.Printf("== %s, %s:\n%s\n", d.Name, name, strings.TrimSpace(plans[name]))
			}
		})
	}
}
