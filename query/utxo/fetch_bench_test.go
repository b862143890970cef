package utxo_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/utxo"
)

// BenchmarkFetcherSpeed compares the chain-neutral fetcher's blocks/s,
// storing UTXO_BENCH_BLOCKS blocks (default 100) of UTXO_BENCH_TXS
// payments each (default 20) to a subscribed address on btcd into
// SQLite, with a bare loop of getblock verbosity 2 and the
// getrawtransaction of the prevouts those blocks spend, alternated in
// the same run (the fetcher rewound between runs); and what the check of
// the statement at the tip costs alone (tip-check-s).
func BenchmarkFetcherSpeed(tb *testing.B) {
	blocks := envCount("UTXO_BENCH_BLOCKS", 100)
	perBlock := envCount("UTXO_BENCH_TXS", 20)
	t := testing.TB(tb)
	ctx := context.Background()
	c := newRegtestChain(t, testenv.DialectBtcd)
	coins := c.fanOut(t, blocks*perBlock, 400, 1000_0000)
	key, _ := btcec.PrivKeyFromBytes([]byte("bench-recipient-key-0123456789ab"))
	to := c.p2wpkh(key.PubKey())

	const name = "BTCREGTEST"
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "addrd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k, secret, err := db.CreateAPIKey(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	acct, err := db.Authenticate(ctx, k.ID, secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Subscribe(ctx, acct.ID, name, to.String); err != nil {
		t.Fatal(err)
	}
	reader, err := utxo.Dial(ctx, c.node.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	f, err := fetch.New(fetch.Config{Chain: name, Store: db, Reader: reader, Native: query.NativeCoin{Symbol: "BTC", Decimals: utxo.Decimals},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var start uint64
	c.node.MustCall(t, &start, "getblockcount")
	catchUp := func(to uint64) {
		for range 1000 {
			if err := f.FetchOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if cp, _, _ := db.Checkpoint(ctx, name); cp.Number >= to {
				return
			}
		}
		t.Fatalf("the fetcher did not reach block %d", to)
	}
	catchUp(start)
	start++
	for b := range blocks {
		for i := range perBlock {
			k := coins[b*perBlock+i]
			if _, err := c.send(ctx, []coin{k}, wire.NewTxOut(500_0000, to.Script), wire.NewTxOut(499_0000, c.payer.Script)); err != nil {
				t.Fatal(err)
			}
		}
		c.node.Generate(t, 1, "")
	}
	end := start + uint64(blocks) - 1

	bare := func() time.Duration { return c.bareLoop(t, start, end) }
	fetched := func() time.Duration {
		if err := db.Rewind(ctx, name, start-1); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		catchUp(end)
		return time.Since(t0)
	}
	tb.ResetTimer()
	var bareTime, fetchTime time.Duration
	for range tb.N {
		bareTime += bare()
		fetchTime += fetched()
	}
	tb.StopTimer()
	rows, err := db.AccountBalanceChanges(ctx, acct.ID, name, to.String, nil, blocks+1)
	if err != nil || len(rows) != blocks {
		t.Fatalf("the statement has %d rows, want %d: %v", len(rows), blocks, err)
	}
	// What one check at the tip costs: the address's outputs from the
	// index and a gettxout of each.
	t0 := time.Now()
	if _, err := reader.Balances(ctx, end, []query.BalanceQuery{{Address: to.String}}); err != nil {
		t.Fatal(err)
	}
	tb.ReportMetric(time.Since(t0).Seconds(), "tip-check-s")
	bps := func(d time.Duration) float64 { return float64(tb.N*blocks) / d.Seconds() }
	tb.ReportMetric(bps(fetchTime), "fetcher-blocks/s")
	tb.ReportMetric(bps(bareTime), "bare-blocks/s")
	tb.ReportMetric(bps(fetchTime)/bps(bareTime), "ratio")
}
