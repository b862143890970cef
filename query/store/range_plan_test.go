package store_test

import (
	"context"
	"fmt"
	"slices"
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
	rows, err := benchdata.BooksRows()
	if err != nil {
		b.Fatal(err)
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
			if err := benchdata.SeedBooks(ctx, db, key.AccountID, rows); err != nil {
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
