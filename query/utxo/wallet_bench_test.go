package utxo_test

import (
	"context"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/utxo"
)

// BenchmarkWalletFirstStatement times a descriptor wallet's first
// statement on btcd: UTXO_BENCH_WALLET_ADDRS used addresses (default
// 100) of wpkh(TPUB/0/*), 10 payments to each, discovered with gap 20
// (History of every derived address), the blocks History names read with
// every derived address tracked, and folded by Wallet.Statement. It
// reports the seconds and the transactions the statement lists.
func BenchmarkWalletFirstStatement(tb *testing.B) {
	addrs := envCount("UTXO_BENCH_WALLET_ADDRS", 100)
	const perAddr, fanout = 10, 1000
	t := testing.TB(tb)
	ctx := context.Background()
	c := newRegtestChain(t, testenv.DialectBtcd)
	_, descs := c.wallet(t)
	total := addrs * perAddr
	coins := c.fanOut(t, total, fanout, 400_0000)
	wallet := make([]utxo.Address, addrs)
	for j := range wallet {
		a, err := descs[0].Derive(uint32(j))
		if err != nil {
			t.Fatal(err)
		}
		wallet[j] = a
	}
	t0 := time.Now()
	for i := range total {
		if _, err := c.send(ctx, []coin{coins[i]}, wire.NewTxOut(300_0000, wallet[i%addrs].Script), wire.NewTxOut(99_0000, c.payer.Script)); err != nil {
			t.Fatal(err)
		}
		if i%2000 == 1999 {
			c.node.Generate(t, 1, "")
		}
	}
	c.node.Generate(t, 1, "")
	tb.Logf("%d payments to %d addresses sent and mined in %s", total, addrs, time.Since(t0).Round(time.Millisecond))
	var tip uint64
	c.node.MustCall(t, &tip, "getblockcount")
	tb.ResetTimer()
	var listed int
	for range tb.N {
		w, err := utxo.NewWallet(utxo.DefaultGapLimit, descs...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.reader.Discover(ctx, w, 0, tip); err != nil {
			t.Fatal(err)
		}
		if n := len(w.Used()); n != addrs {
			t.Fatalf("%d addresses found used, want %d", n, addrs)
		}
		blocks := map[uint64]bool{}
		tracked := map[string]bool{}
		for _, a := range w.Used() {
			hs, err := c.reader.History(ctx, a, 0, tip)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				blocks[h] = true
			}
		}
		for _, a := range w.Addresses() {
			tracked[a] = true
		}
		listed = 0
		for h := range blocks {
			acts, err := c.reader.Activity(ctx, chain.Query{From: h, To: h, Tracked: tracked})
			if err != nil || len(acts) != 1 {
				t.Fatalf("block %d: %v", h, err)
			}
			txs, err := w.Statement(acts[0])
			if err != nil {
				t.Fatal(err)
			}
			listed += len(txs)
		}
		if listed != total {
			t.Fatalf("the statement lists %d transactions, want %d", listed, total)
		}
	}
	tb.ReportMetric(tb.Elapsed().Seconds()/float64(tb.N), "s/statement")
	tb.ReportMetric(float64(listed), "txs")
}
