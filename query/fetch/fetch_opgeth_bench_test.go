package fetch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/internal/testenv/opgeth"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// BenchmarkFetchOPGeth is BenchmarkFetchGeth on a real op-geth: blocks
// indexed per second, traces on and the 10 addresses the transfers go
// to subscribed (their fees with L1 and operator parts, a deposit in
// every block), against the bare loop over the same blocks, receipts and
// traces in the same run (A B B A). The bare loop decodes JSON without
// go-ethereum's types, which do not know deposits.
func BenchmarkFetchOPGeth(b *testing.B) {
	ctx := context.Background()
	n := opgeth.New(b, opgeth.Config{})
	var dests []common.Address
	for i := range 10 {
		dests = append(dests, common.HexToAddress(fmt.Sprintf("0x%040x", 0xbe7c5000000+i)))
	}
	start := uint64(0)
	t0 := time.Now()
	var end uint64
	for r := range *benchGethRounds / 4 {
		var blk opgeth.Block
		for i := range *benchGethTxs {
			blk.Txs = append(blk.Txs, opgeth.Tx{From: i % len(n.Accounts), To: &dests[(r+i)%len(dests)], Value: big.NewInt(int64(1 + i)), Gas: 100_000})
		}
		blk.Deposits = []opgeth.Deposit{{From: dests[r%len(dests)], To: &dests[(r+1)%len(dests)], Mint: big.NewInt(1e15), Value: big.NewInt(1e14), Gas: 100_000}}
		m, err := n.Mine(ctx, blk)
		if err != nil {
			b.Fatal(err)
		}
		end = m.Number
	}
	b.Logf("chain: %d blocks, %d transactions, made in %s", end-start, (*benchGethRounds/4)*(*benchGethTxs+2), time.Since(t0).Round(time.Millisecond))
	subs := make([]string, len(dests))
	for i, d := range dests {
		subs[i] = strings.ToLower(d.Hex())
	}
	fetchRate := func() float64 {
		db, err := store.Open(ctx, testenv.SQLite(b))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		key, _, err := db.CreateAPIKey(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range subs {
			if _, err := db.Subscribe(ctx, key.AccountID, chain, a); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.MarkSynced(ctx, chain, subs, start, start); err != nil {
			b.Fatal(err)
		}
		src, err := evm.Dial(ctx, n.URL, evm.SourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Source: src, Reader: evm.NewReader(src), Logger: slog.New(slog.DiscardHandler),
			Traces: fetch.TracesOn, BackfillBlocks: 1})
		if err != nil {
			b.Fatal(err)
		}
		c, err := rpc.DialContext(ctx, n.URL)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := db.StoreBlock(ctx, chain, query.Block{Number: start, Hash: blockHash(b, c, start), Time: time.Now()}, nil, nil); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for cp, _, _ := db.Checkpoint(ctx, chain); cp.Number < end; cp, _, _ = db.Checkpoint(ctx, chain) {
			if err := f.FetchOnce(ctx); err != nil {
				b.Fatal(err)
			}
		}
		return float64(end-start) / time.Since(t0).Seconds()
	}
	b.ResetTimer()
	ref1 := rawReferenceLoop(b, n.URL, start, end)
	f1 := fetchRate()
	f2 := fetchRate()
	ref2 := rawReferenceLoop(b, n.URL, start, end)
	b.StopTimer()
	ref, few := (ref1+ref2)/2, (f1+f2)/2
	b.ReportMetric(ref, "ref-blocks/s")
	b.ReportMetric(few, "blocks/s")
	b.ReportMetric(few/ref, "ratio-ref")
	fmt.Printf("fetch op-geth: %d blocks: reference %.1f blocks/s (runs %.1f, %.1f); fetcher, traces on, 10 subscriptions %.1f blocks/s (%.1f, %.1f); ratio %.2f (want >= 0.9)\n",
		end-start, ref, ref1, ref2, few, f1, f2, few/ref)
}

// rawReferenceLoop is referenceLoop decoding into raw JSON: blocks start+1
// to end with their transactions, their receipts and their traces, one
// block after the other.
func rawReferenceLoop(b *testing.B, url string, start, end uint64) float64 {
	ctx := context.Background()
	c, err := rpc.DialContext(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	t0 := time.Now()
	for n := start + 1; n <= end; n++ {
		at := hexutil.EncodeUint64(n)
		var blk, receipts, traces json.RawMessage
		if err := c.CallContext(ctx, &blk, "eth_getBlockByNumber", at, true); err != nil {
			b.Fatal(err)
		}
		if err := c.CallContext(ctx, &receipts, "eth_getBlockReceipts", at); err != nil {
			b.Fatal(err)
		}
		if err := c.CallContext(ctx, &traces, "debug_traceBlockByNumber", at, map[string]any{"tracer": "callTracer"}); err != nil {
			b.Fatal(err)
		}
	}
	return float64(end-start) / time.Since(t0).Seconds()
}
