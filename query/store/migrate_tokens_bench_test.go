package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
)

// BenchmarkMigrateTokens: migration 0090 (tokens.sql, one set-based
// statement) on a database of 10,000 token transactions of 100 tokens
// and their 10,000 balances: the time of one run, each dialect.
func BenchmarkMigrateTokens(b *testing.B) {
	for _, d := range testenv.DBs() {
		b.Run(d.Name, func(b *testing.B) {
			ctx := context.Background()
			db, err := Open(ctx, d.DSN(b))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			var (
				txs      []query.Transaction
				balances []query.Balance
			)
			for i := range 10_000 {
				from, to := fmt.Sprintf("0x%040x", 1+i%100), fmt.Sprintf("0x%040x", 1000+i)
				token := fmt.Sprintf("0x%040x", 1_000_000+i%100)
				txs = append(txs, query.Transaction{Chain: "ETH", Hash: fmt.Sprintf("0x%064x", i), BlockNumber: uint64(i / 100), BlockHash: "0xb",
					BlockTime: time.Unix(1_700_000_000, 0), Index: uint(i % 100), Status: query.StatusSuccess, From: from, To: token,
					Value: query.AmountOf(0), Fee: query.AmountOf(21000),
					Transfers: []query.Transfer{{Position: 0, Asset: query.AssetERC20, Contract: token, From: from, To: to, Amount: query.AmountOf(1),
						Kind: query.KindToken, Symbol: fmt.Sprintf("T%d", i%100), Name: fmt.Sprintf("Token %d", i%100), Decimals: 18}}})
				balances = append(balances, query.Balance{Chain: "ETH", Address: to, Asset: query.AssetERC20, Contract: token,
					Symbol: fmt.Sprintf("T%d", i%100), Name: fmt.Sprintf("Token %d", i%100), Decimals: 18, Amount: query.AmountOf(1), Block: uint64(i / 100)})
			}
			if err := db.PutTransactions(ctx, "ETH", txs); err != nil {
				b.Fatal(err)
			}
			if err := db.PutBalances(ctx, balances); err != nil {
				b.Fatal(err)
			}
			all, err := migrations(db.postgres)
			if err != nil {
				b.Fatal(err)
			}
			var m Migration
			for _, x := range all {
				if x.Version == 90 {
					m = x
				}
			}
			for b.Loop() {
				b.StopTimer()
				if _, err := db.w.ExecContext(ctx, "DROP TABLE tokens"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				err := db.tx(ctx, func(tx bun.Tx) error {
					for _, s := range statements(m.sql) {
						if _, err := tx.ExecContext(ctx, s); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms/migrate")
			}
			var n int
			if err := db.w.NewRaw("SELECT count(*) FROM tokens").Scan(ctx, &n); err != nil || n != 100 {
				b.Fatalf("%d tokens, %v", n, err)
			}
		})
	}
}
