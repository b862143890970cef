package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// BenchmarkTransactionsDepth reads a page of 50 transactions of the hot
// address as the API does (AccountTransactions, subscription checked in
// the same statement), first from the most recent and then at depth
// 10,000, over 10,000 subscribed addresses and 1,000,000 transactions.
// Keyset paging makes the two cost the same; scripts/bench-addrd.sh
// prints the ratio.
func BenchmarkTransactionsDepth(b *testing.B) {
	benchdata.Run(b, testenv.Postgres, func(b *testing.B, db *store.DB, id, secret string) {
		ctx := context.Background()
		acct, err := db.Authenticate(ctx, id, secret)
		if err != nil {
			b.Fatal(err)
		}
		hot := benchdata.Address(1)

		// The cursor after the first 10,000 transactions.
		var after *query.TxCursor
		for range 10 {
			page, err := db.Transactions(ctx, "ETH", hot, after, 1000)
			if err != nil || len(page) != 1000 {
				b.Fatalf("walking to depth: %d, %v", len(page), err)
			}
			last := page[len(page)-1]
			after = &query.TxCursor{BlockNumber: last.BlockNumber, Index: last.Index}
		}
		page := func(after *query.TxCursor) func() {
			return func() {
				txs, err := db.AccountTransactions(ctx, acct.ID, "ETH", hot, after, 50)
				if err != nil || len(txs) != 50 {
					b.Fatalf("page: %d, %v", len(txs), err)
				}
			}
		}
		f, d := benchdata.Interleaved(b.Loop, page(nil), page(after))
		b.ReportMetric(float64(f.Microseconds()), "first-µs")
		b.ReportMetric(float64(d.Microseconds()), "depth10000-µs")
		b.ReportMetric(float64(d)/float64(f), "depth/first")
	})
}

// BenchmarkReads times the API's reads through the store alone, one at a
// time (no HTTP, no concurrency): the key check, then balances, the first
// page of transactions and the first page of the statement each with the
// requester's subscription, over 10,000 subscribed addresses and 100,000
// transactions (WHARF_BENCH_TXS sets another number). Run it with
// -count 6 and compare with benchstat: it is quick enough to try a
// change to a query or a driver setting before the HTTP benchmark.
func BenchmarkReads(b *testing.B) {
	if os.Getenv("WHARF_BENCH_TXS") == "" {
		b.Setenv("WHARF_BENCH_TXS", "100000")
	}
	benchdata.Run(b, testenv.Postgres, func(b *testing.B, db *store.DB, id, secret string) {
		ctx := context.Background()
		acct, err := db.Authenticate(ctx, id, secret)
		if err != nil {
			b.Fatal(err)
		}
		hot, other := benchdata.Address(1), benchdata.Address(2)
		for _, r := range []struct {
			name string
			read func() (int, error)
		}{
			{"auth", func() (int, error) { _, err := db.Authenticate(ctx, id, secret); return 1, err }},
			{"balances", func() (int, error) {
				_, bs, err := db.SubscriptionBalances(ctx, acct.ID, "ETH", other)
				return len(bs), err
			}},
			{"transactions", func() (int, error) {
				_, txs, err := db.SubscriptionTransactions(ctx, acct.ID, "ETH", hot, nil, 51)
				return len(txs), err
			}},
			{"statement", func() (int, error) {
				_, rows, err := db.SubscriptionBalanceChanges(ctx, acct.ID, "ETH", hot, nil, 51)
				return len(rows), err
			}},
			// The statement page as the API reads it now: with
			// the labels of its assets, through the books' range read.
			{"statement-range", func() (int, error) {
				n := 0
				_, _, err := db.SubscriptionChangeRangeFunc(ctx, acct.ID, "ETH", hot, query.Range{}, nil, 50, 50,
					func(*query.BalanceChange, query.Label) error { n++; return nil })
				return n, err
			}},
		} {
			b.Run(r.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if n, err := r.read(); err != nil || n == 0 {
						b.Fatalf("%s: %d, %v", r.name, n, err)
					}
				}
			})
		}
	})
}
