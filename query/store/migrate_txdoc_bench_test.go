package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
)

// BenchmarkRewriteTxDocs: migration 0088 on a database of 10,000
// transactions of two addresses each, their documents as the release
// before wrote them (version 4): the time of one rewrite, each dialect.
func BenchmarkRewriteTxDocs(b *testing.B) {
	for _, d := range testenv.DBs() {
		b.Run(d.Name, func(b *testing.B) {
			ctx := context.Background()
			db, err := Open(ctx, d.DSN(b), WithLegacyDetail(evm.LegacyDetail))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			var txs []query.Transaction
			for i := range 10_000 {
				from, to := fmt.Sprintf("0x%040x", 1+i%100), fmt.Sprintf("0x%040x", 101+i%37)
				txs = append(txs, query.Transaction{Chain: "ETH", Hash: fmt.Sprintf("0x%064x", i), BlockNumber: uint64(i / 100), BlockHash: "0xb",
					BlockTime: time.Unix(1_700_000_000, 0), Index: uint(i % 100), Status: query.StatusSuccess, From: from, To: to,
					Value: query.AmountOf(1), Fee: query.AmountOf(21000),
					Detail:    evm.TxDetail{Nonce: uint64(i), Type: 2, GasLimit: 21000, GasUsed: 21000, EffectiveGasPrice: query.AmountOf(1), Input: "0x"}.JSON(),
					Transfers: []query.Transfer{{Position: -1, Asset: query.AssetNative, From: from, To: to, Amount: query.AmountOf(1), Kind: query.KindTransaction, Symbol: "ETH", Decimals: 18}}})
			}
			if err := db.PutTransactions(ctx, "ETH", txs); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				b.StopTimer()
				err := db.tx(ctx, func(tx bun.Tx) error {
					for _, t := range txs {
						old := string(appendTxDocV4(nil, t))
						if _, err := tx.ExecContext(ctx, "UPDATE transactions SET doc = ? WHERE chain = 'ETH' AND hash = ?", old, t.Hash); err != nil {
							return err
						}
						if _, err := tx.ExecContext(ctx, "UPDATE tx_addresses SET doc = ? WHERE chain = 'ETH' AND block_number = ? AND tx_index = ?", old, t.BlockNumber, t.Index); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				if err := db.tx(ctx, func(tx bun.Tx) error { return rewriteTxDocs(ctx, tx, db) }); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/rewrite")
			}
			var old int
			if err := db.w.NewRaw("SELECT count(*) FROM tx_addresses WHERE substr(doc, 1, 3) <> '1:6'").Scan(ctx, &old); err != nil || old != 0 {
				b.Fatalf("%d documents left, %v", old, err)
			}
		})
	}
}
