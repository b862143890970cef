package fetch_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

var (
	benchBlocks = flag.Int("fetch.blocks", 1000, "BenchmarkFetch: blocks on the chain")
	benchTxs    = flag.Int("fetch.txs", 100, "BenchmarkFetch: transactions per block")
	benchSubs   = flag.Int("fetch.subs", 100_000, "BenchmarkFetch: subscriptions of the large run")

	benchGethRounds = flag.Int("fetch.geth-blocks", 300, "BenchmarkFetchGeth: rounds of transfers sent")
	benchGethTxs    = flag.Int("fetch.geth-txs", 20, "BenchmarkFetchGeth: transfers a round")
)

// BenchmarkFetch measures blocks indexed per second on the dev chain over
// HTTP JSON-RPC into SQLite, with traces on, with 10 subscriptions (the
// demo accounts, which every transaction touches) and with -fetch.subs
// subscriptions (the same 10 and idle ones), against a reference loop in
// the same run that only reads the same blocks, receipts and traces
// (debug_traceBlockByNumber, callTracer) over the same endpoint with
// ethclient. It is one measurement, whatever b.N: run it with
// -benchtime=1x (scripts/bench-fetch.sh does).
func BenchmarkFetch(b *testing.B) {
	ctx := context.Background()
	// An archive: the fetcher and the reference trace blocks far behind
	// the head, which needs their parents' state.
	dev := devchaintest.Start(b, devchain.Config{Accounts: 10, TxsPerBlock: *benchTxs, Archive: true})
	start, _ := dev.Head()
	t0 := time.Now()
	for range *benchBlocks {
		if _, err := dev.Step(ctx); err != nil {
			b.Fatal(err)
		}
	}
	end, _ := dev.Head()
	b.Logf("chain: %d blocks of %d transactions made in %s", end-start, *benchTxs, time.Since(t0).Round(time.Millisecond))

	reference := func() float64 { return referenceLoop(b, dev.URL, start, end) }
	fetch := func(subs int) float64 {
		db := seedSubscriptions(b, testenv.SQLite(b), dev, subs, start)
		defer db.Close()
		src, err := evm.Dial(ctx, dev.URL, evm.SourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), Logger: slog.New(slog.DiscardHandler),
			Internals: fetch.InternalsOn})
		if err != nil {
			b.Fatal(err)
		}
		rate := fetchToEnd(b, f, db, start, end)
		txs, err := db.Transactions(ctx, chain, addr(dev.Accounts[0]), nil, 1)
		if err != nil || len(txs) == 0 || txs[0].BlockNumber != end {
			b.Fatalf("the fetcher did not store the last block's transactions: %v %v", txs, err)
		}
		return rate
	}

	// In the order A B C C B A, so that a machine whose load drifts during
	// the run weighs on each the same.
	b.ResetTimer()
	// Each run carries a profiler label, so that a -cpuprofile tells them
	// apart (go tool pprof -tagfocus run=100000).
	labelled := func(run string, f func() float64) (r float64) {
		pprof.Do(ctx, pprof.Labels("run", run), func(context.Context) { r = f() })
		return r
	}
	ref1 := labelled("reference", reference)
	few1 := labelled("10", func() float64 { return fetch(10) })
	many1 := labelled(strconv.Itoa(*benchSubs), func() float64 { return fetch(*benchSubs) })
	many2 := labelled(strconv.Itoa(*benchSubs), func() float64 { return fetch(*benchSubs) })
	few2 := labelled("10", func() float64 { return fetch(10) })
	ref2 := labelled("reference", reference)
	b.StopTimer()
	ref, few, many := (ref1+ref2)/2, (few1+few2)/2, (many1+many2)/2
	b.Logf("runs: reference %.1f %.1f; 10 subscriptions %.1f %.1f; %d subscriptions %.1f %.1f blocks/s", ref1, ref2, few1, few2, *benchSubs, many1, many2)
	b.ReportMetric(ref, "ref-blocks/s")
	b.ReportMetric(few, "blocks/s-10subs")
	b.ReportMetric(many, fmt.Sprintf("blocks/s-%dsubs", *benchSubs))
	b.ReportMetric(many/few, "ratio-subs")
	b.ReportMetric(few/ref, "ratio-ref")
	fmt.Printf("fetch: %d blocks x %d txs: reference %.1f blocks/s (runs %.1f, %.1f); 10 subscriptions %.1f blocks/s (%.1f, %.1f); %d subscriptions %.1f blocks/s (%.1f, %.1f)\n",
		end-start, *benchTxs, ref, ref1, ref2, few, few1, few2, *benchSubs, many, many1, many2)
	fmt.Printf("fetch: ratio %d/10 subscriptions = %.2f (want >= 0.8); 10 subscriptions / reference = %.2f, %d / reference = %.2f (want >= 0.7)\n",
		*benchSubs, many/few, few/ref, *benchSubs, many/ref)
}

// fetchToEnd runs f until db's checkpoint reaches end and returns the
// blocks per second from start. The setup's garbage is collected first:
// it is the seeding's, not the fetcher's.
func fetchToEnd(b *testing.B, f *fetch.Fetcher, db *store.DB, start, end uint64) float64 {
	b.Helper()
	ctx := context.Background()
	runtime.GC()
	t0 := time.Now()
	for {
		if err := f.FetchOnce(ctx); err != nil {
			b.Fatal(err)
		}
		cp, _, err := db.Checkpoint(ctx, chain)
		if err != nil {
			b.Fatal(err)
		}
		if cp.Number >= end {
			return float64(end-start) / time.Since(t0).Seconds()
		}
	}
}

// referenceLoop reads blocks start+1 to end, their receipts and their
// traces (callTracer) one after the other with ethclient, and returns the
// blocks per second: what following a chain costs the node and the
// connection, without storing anything.
func referenceLoop(b *testing.B, url string, start, end uint64) float64 {
	ctx := context.Background()
	c, err := rpc.DialContext(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ec := ethclient.NewClient(c)
	t0 := time.Now()
	for n := start + 1; n <= end; n++ {
		blk, err := ec.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ec.BlockReceipts(ctx, rpc.BlockNumberOrHashWithHash(blk.Hash(), false)); err != nil {
			b.Fatal(err)
		}
		var traces []any
		if err := c.CallContext(ctx, &traces, "debug_traceBlockByNumber", hexutil.EncodeUint64(n), map[string]any{"tracer": "callTracer"}); err != nil {
			b.Fatal(err)
		}
	}
	return float64(end-start) / time.Since(t0).Seconds()
}

// BenchmarkFetchGeth measures blocks indexed per second from a real geth
// --dev node, with traces on and the 10 addresses its transfers go to
// subscribed, against the reference loop over the same blocks, receipts
// and traces in the same run (A B B A). The chain: -fetch.geth-blocks
// rounds of -fetch.geth-txs transfers sent in one JSON-RPC batch (geth
// seals them into one or a few blocks).
func BenchmarkFetchGeth(b *testing.B) {
	ctx := context.Background()
	// An archive: the reference and the fetcher trace blocks more than
	// 128 behind the head, whose state a plain dev node no longer keeps.
	g := testenv.NewArchiveGeth(b)
	var dests []string
	for i := range 10 {
		dests = append(dests, fmt.Sprintf("0x%040x", 0xbe7c5000000+i))
	}
	c, err := rpc.DialContext(ctx, g.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	start, _ := ethclient.NewClient(c).BlockNumber(ctx)
	var nonce hexutil.Uint64
	if err := c.CallContext(ctx, &nonce, "eth_getTransactionCount", g.Account, "pending"); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	var last string
	for r := range *benchGethRounds {
		batch := make([]rpc.BatchElem, *benchGethTxs)
		hashes := make([]string, len(batch))
		for i := range batch {
			tx := map[string]any{"from": g.Account, "to": dests[(r+i)%len(dests)], "value": hexutil.EncodeUint64(uint64(1 + i)),
				"gas": hexutil.EncodeUint64(300_000), "nonce": hexutil.EncodeUint64(uint64(nonce))}
			nonce++
			batch[i] = rpc.BatchElem{Method: "eth_sendTransaction", Args: []any{tx}, Result: &hashes[i]}
		}
		if err := c.BatchCallContext(ctx, batch); err != nil {
			b.Fatal(err)
		}
		for _, e := range batch {
			if e.Error != nil {
				b.Fatal(e.Error)
			}
		}
		last = hashes[len(hashes)-1]
	}
	if _, err := g.Receipt(ctx, last); err != nil {
		b.Fatal(err)
	}
	end, _ := ethclient.NewClient(c).BlockNumber(ctx)
	b.Logf("chain: %d blocks, %d transactions, made in %s", end-start, *benchGethRounds**benchGethTxs, time.Since(t0).Round(time.Millisecond))
	fetch := func() float64 {
		db, err := store.Open(ctx, testenv.SQLite(b))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		key, _, err := db.CreateAPIKey(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		subs := append([]string{g.Account}, dests...)
		for _, a := range subs {
			if _, err := db.Subscribe(ctx, key.AccountID, chain, a); err != nil {
				b.Fatal(err)
			}
		}
		// Synced at block start already: the steady state, not a first sync.
		if err := db.MarkSynced(ctx, chain, subs, start, start); err != nil {
			b.Fatal(err)
		}
		src, err := evm.Dial(ctx, g.URL, evm.SourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), Logger: slog.New(slog.DiscardHandler),
			Internals: fetch.InternalsOn, BackfillBlocks: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.StoreBlock(ctx, chain, query.Block{Number: start, Hash: blockHash(b, c, start), Time: time.Now()}, nil, nil); err != nil {
			b.Fatal(err)
		}
		cp, _, _ := db.Checkpoint(ctx, chain)
		from := cp.Number
		t0 := time.Now()
		for cp.Number < end {
			if err := f.FetchOnce(ctx); err != nil {
				b.Fatal(err)
			}
			if cp, _, err = db.Checkpoint(ctx, chain); err != nil {
				b.Fatal(err)
			}
		}
		return float64(end-from) / time.Since(t0).Seconds()
	}
	b.ResetTimer()
	ref1 := referenceLoop(b, g.URL, start, end)
	f1 := fetch()
	f2 := fetch()
	ref2 := referenceLoop(b, g.URL, start, end)
	b.StopTimer()
	ref, few := (ref1+ref2)/2, (f1+f2)/2
	b.ReportMetric(ref, "ref-blocks/s")
	b.ReportMetric(few, "blocks/s")
	b.ReportMetric(few/ref, "ratio-ref")
	fmt.Printf("fetch geth: %d blocks: reference %.1f blocks/s (runs %.1f, %.1f); fetcher, traces on, 10 subscriptions %.1f blocks/s (%.1f, %.1f); ratio %.2f (want >= 0.7)\n",
		end-start, ref, ref1, ref2, few, f1, f2, few/ref)
}

func blockHash(b *testing.B, c *rpc.Client, n uint64) string {
	var blk struct{ Hash string }
	if err := c.CallContext(context.Background(), &blk, "eth_getBlockByNumber", hexutil.EncodeUint64(n), false); err != nil {
		b.Fatal(err)
	}
	return blk.Hash
}

// seedSubscriptions opens a store at dsn and subscribes the demo
// accounts and n-10 idle addresses through it, already synced up to block
// at (a steady state, not a first sync), and makes block at the
// checkpoint. The fetcher then works through the same store, as in
// `addrd serve`, where subscriptions arrive through the API's connection.
func seedSubscriptions(b *testing.B, dsn string, dev *devchain.Chain, n int, at uint64) *store.DB {
	b.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	key, _, err := db.CreateAPIKey(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	var addrs []string
	for _, a := range dev.Accounts {
		addrs = append(addrs, addr(a))
	}
	for i := len(addrs); i < n; i++ {
		addrs = append(addrs, fmt.Sprintf("0x%040x", 0xbe7c4000000+i))
	}
	// Rows written 500 a transaction: subscribing one by one would time
	// the setup.
	now := time.Now().UTC()
	for part := range slices.Chunk(addrs, 500) {
		var subs, tracked []string
		var subArgs, trackedArgs []any
		for _, a := range part {
			subs = append(subs, "(?, ?, ?, ?)")
			subArgs = append(subArgs, key.AccountID, chain, a, now)
			tracked = append(tracked, "(?, ?, TRUE, FALSE, 0, ?)")
			trackedArgs = append(trackedArgs, chain, a, at)
		}
		err := db.Bun().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, "INSERT INTO subscriptions (account_id, chain, address, created) VALUES "+strings.Join(subs, ", "), subArgs...); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO tracked (chain, address, active, needs_sync, sync_from, synced_to) VALUES "+strings.Join(tracked, ", "), trackedArgs...)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := db.StoreBlock(ctx, chain, query.Block{Number: at, Hash: dev.BlockHash(at).Hex(), Time: time.Now()}, nil, nil); err != nil {
		b.Fatal(err)
	}
	// The seeding's deferred work is the setup's, not the fetcher's: fold
	// its WAL into the database file before the clock starts.
	if _, err := db.Bun().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	return db
}
