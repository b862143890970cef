package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

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
		// Interleaved, so that the load of a shared machine falls on
		// both alike; the medians are reported and their ratio.
		var first, deep []time.Duration
		page := func(after *query.TxCursor) time.Duration {
			t := time.Now()
			txs, err := db.AccountTransactions(ctx, acct.ID, "ETH", hot, after, 50)
			if err != nil || len(txs) != 50 {
				b.Fatalf("page: %d, %v", len(txs), err)
			}
			return time.Since(t)
		}
		for b.Loop() {
			first = append(first, page(nil))
			deep = append(deep, page(after))
		}
		f, d := median(first), median(deep)
		b.ReportMetric(float64(f.Microseconds()), "first-µs")
		b.ReportMetric(float64(d.Microseconds()), "depth10000-µs")
		b.ReportMetric(float64(d)/float64(f), "depth/first")
	})
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
