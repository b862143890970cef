package api_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// benchStore opens a benchmark's store at dsn, closed at b's end, with
// an API key and its secret.
func benchStore(b *testing.B, dsn string) (*store.DB, query.APIKey, string) {
	b.Helper()
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	key, secret, err := db.CreateAPIKey(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	return db, key, secret
}

// BenchmarkStatement measures the statement's keyset paging, on
// PostgreSQL and SQLite, over an address with 20,000 rows (and 200,000 of
// other addresses): a page of 50 at depth 10,000 against the first page,
// medians of interleaved reads through the store (target <= 1.2). The
// first page over HTTP against a constant handler is BenchmarkHTTP's.
// scripts/bench-addrd.sh prints the figures.
func BenchmarkStatement(b *testing.B) {
	for _, d := range testenv.DBs() {
		b.Run(d.Name, func(b *testing.B) {
			ctx := context.Background()
			db, key, _ := benchStore(b, d.DSN(b))
			hot := "0x00000000000000000000000000000000000be7c1"
			if _, err := db.Subscribe(ctx, key.AccountID, "ETH", hot); err != nil {
				b.Fatal(err)
			}
			seedStatement(b, db, hot, 20_000)
			for i := range 10 {
				seedStatement(b, db, fmt.Sprintf("0x%040x", 0xbe7c2000+i), 20_000)
			}

			b.ResetTimer()
			// The cursor after the first 10,000 rows.
			var after *query.ChangeCursor
			for range 10 {
				rows, err := db.AccountBalanceChanges(ctx, key.AccountID, "ETH", hot, after, 1000)
				if err != nil || len(rows) != 1000 {
					b.Fatalf("walking to depth: %d, %v", len(rows), err)
				}
				last := rows[len(rows)-1]
				after = &query.ChangeCursor{Block: last.Block, Contract: last.Contract}
			}
			read := func(after *query.ChangeCursor) func() {
				return func() {
					rows, err := db.AccountBalanceChanges(ctx, key.AccountID, "ETH", hot, after, 50)
					if err != nil || len(rows) != 50 {
						b.Fatalf("page: %d, %v", len(rows), err)
					}
				}
			}
			f, dp := benchdata.Interleaved(benchdata.Times(300), read(nil), read(after))
			b.StopTimer()
			b.ReportMetric(float64(dp)/float64(f), "depth/first")
			fmt.Printf("statement %s: page at depth 10,000 %v vs first %v = %.2f (want <= 1.2)\n",
				d.Name, dp, f, float64(dp)/float64(f))
		})
	}
}

// seedStatement gives address n statement rows, one a block, native and
// a token alternating, as the fetcher writes them.
func seedStatement(b *testing.B, db *store.DB, address string, n int) {
	b.Helper()
	ctx := context.Background()
	var rows []query.BalanceChange
	for i := 1; i <= n; i++ {
		contract := ""
		if i%2 == 0 {
			contract = "0x00000000000000000000000000000000000000c0"
		}
		rows = append(rows, query.BalanceChange{Chain: "ETH", Address: address, Contract: contract, Block: uint64(i),
			Time: time.Unix(1_700_000_000+int64(i)*12, 0), Amount: query.AmountOf(int64(1_000_000 + i)), BalanceAfter: query.AmountOf(int64(i * 1_000_000)),
			Causes: []query.Cause{{Kind: query.KindTransaction, TxHash: fmt.Sprintf("0x%064x", i), Amount: query.AmountOf(int64(1_000_021 + i))},
				{Kind: query.KindFee, TxHash: fmt.Sprintf("0x%064x", i), Amount: query.AmountOf(-21)}},
			Checked: true, Reconciled: true, Internals: true})
	}
	for part := range slices.Chunk(rows, 1000) {
		if err := db.PutStatement(ctx, "ETH", part, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
