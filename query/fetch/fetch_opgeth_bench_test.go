package fetch_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/internal/testenv/opgeth"
	"github.com/wharfhq/wharf/query"
	seam "github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

var (
	benchOPBlocks = flag.Int("fetch.op-blocks", 240, "BenchmarkFetchOPGeth: blocks on the chain, each of -fetch.geth-txs transfers and a deposit")
	benchOPRounds = flag.Int("fetch.op-rounds", 3, "BenchmarkFetchOPGeth: rounds of the bare loop and the fetcher")
)

// BenchmarkFetchOPGeth is BenchmarkFetchGeth on a real op-geth: blocks
// indexed per second, traces on and the 10 addresses the transfers go
// to subscribed (their fees with L1 and operator parts, a deposit in
// every block), against the bare loop over the same blocks, receipts and
// traces, decoded as raw JSON (go-ethereum's types do not know
// deposits), and the EVM family's reads alone (Reader.Activity, what the
// fetcher reads from the node, nothing stored). After one pass of the
// bare loop that is not counted (the first read of a block costs op-geth
// more than the next ones), it runs -fetch.op-rounds rounds of the three,
// in turns (A B C, C B A, ...), and reports the median of the rounds'
// ratios: on this machine one run of 75 blocks lasted a second, and three
// in a row gave 0.66, 0.80 and 1.18. Beside the rates it reports the CPU
// time a block costs op-geth (from /proc) and this process (the fetcher,
// the reads, or the loop's), which the load moves far less than a rate:
// where every core is busy, a rate is mostly the share of the CPU a run
// got, and the fetcher's storing is CPU the bare loop does not spend.
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
	for r := range *benchOPBlocks {
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
	blocks := end - start
	b.Logf("chain: %d blocks, %d transactions, made in %s", blocks, uint64(*benchOPBlocks)*uint64(*benchGethTxs+2), time.Since(t0).Round(time.Millisecond))
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
		f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), Logger: slog.New(slog.DiscardHandler),
			Internals: fetch.InternalsOn, BackfillBlocks: 1})
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
		runtime.GC() // the setup's garbage
		t0 := time.Now()
		for cp, _, _ := db.Checkpoint(ctx, chain); cp.Number < end; cp, _, _ = db.Checkpoint(ctx, chain) {
			if err := f.FetchOnce(ctx); err != nil {
				b.Fatal(err)
			}
		}
		return float64(blocks) / time.Since(t0).Seconds()
	}
	refRate := func() float64 { return rawReferenceLoop(b, n.URL, start, end) }
	// readRate is the EVM family's reads alone: Reader.Activity over the
	// same chunks of 16 blocks as the head follower, for the same
	// addresses, with traces, nothing stored. The fetcher is these reads,
	// the balances read for the statement, and storing.
	set := make(map[string]bool, len(subs))
	for _, a := range subs {
		set[a] = true
	}
	readRate := func() float64 {
		src, err := evm.Dial(ctx, n.URL, evm.SourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		r := evm.NewReader(src)
		r.UseInternals(query.TraceCallTracer)
		t0 := time.Now()
		for lo := start + 1; lo <= end; lo += 16 {
			hi := min(end, lo+15)
			acts, err := r.Activity(ctx, seam.Query{From: lo, To: hi, Tracked: set, Pass: "head"})
			if err != nil {
				b.Fatal(err)
			}
			if len(acts) != int(hi-lo+1) || len(acts[0].Txs) == 0 {
				b.Fatalf("blocks %d to %d: %d activities", lo, hi, len(acts))
			}
		}
		return float64(blocks) / time.Since(t0).Seconds()
	}
	// run runs one of them under a profiler label (go test -cpuprofile,
	// then go tool pprof -tagfocus=run=fetcher) and measures its rate and
	// the CPU a block cost op-geth and this process.
	run := func(name string, f func() float64) opRun {
		node0, self0 := pidCPU(b, n.Pid()), processCPU(b)
		var r opRun
		pprof.Do(ctx, pprof.Labels("run", name), func(context.Context) { r.rate = f() })
		r.node = (pidCPU(b, n.Pid()) - node0) / time.Duration(blocks)
		r.self = (processCPU(b) - self0) / time.Duration(blocks)
		return r
	}
	b.ResetTimer()
	refRate() // the warm-up pass
	var refs, fetches, reads []opRun
	var ratios, cpuRatios, readRatios []float64
	for round := range max(1, *benchOPRounds) {
		var ref, few, rd opRun
		if round%2 == 0 {
			ref, rd, few = run("reference", refRate), run("reader", readRate), run("fetcher", fetchRate)
		} else {
			few, rd, ref = run("fetcher", fetchRate), run("reader", readRate), run("reference", refRate)
		}
		refs, fetches, reads = append(refs, ref), append(fetches, few), append(reads, rd)
		ratios = append(ratios, few.rate/ref.rate)
		readRatios = append(readRatios, rd.rate/ref.rate)
		cpuRatios = append(cpuRatios, float64(ref.node+ref.self)/float64(few.node+few.self))
	}
	b.StopTimer()
	ref, few, rd := meanRun(refs), meanRun(fetches), meanRun(reads)
	ratio, cpuRatio, readRatio := median(ratios), median(cpuRatios), median(readRatios)
	b.ReportMetric(ref.rate, "ref-blocks/s")
	b.ReportMetric(few.rate, "blocks/s")
	b.ReportMetric(ratio, "ratio-ref")
	b.ReportMetric(cpuRatio, "ratio-cpu")
	b.ReportMetric(readRatio, "ratio-reads")
	fmt.Printf("fetch op-geth: %d blocks: reference %.1f blocks/s, fetcher (traces on, 10 subscriptions) %.1f blocks/s; ratio %.2f, the median of %s (want >= 0.9)\n",
		blocks, ref.rate, few.rate, ratio, roundList(ratios))
	fmt.Printf("fetch op-geth: CPU a block: reference %.2f ms op-geth + %.2f ms reading, fetcher %.2f ms op-geth + %.2f ms fetcher; reference / fetcher %.2f, the median of %s\n",
		ms(ref.node), ms(ref.self), ms(few.node), ms(few.self), cpuRatio, roundList(cpuRatios))
	fmt.Printf("fetch op-geth: the family's reads alone (Reader.Activity, nothing stored) %.1f blocks/s, %.2f ms op-geth + %.2f ms reading a block; ratio %.2f, the median of %s\n",
		rd.rate, ms(rd.node), ms(rd.self), readRatio, roundList(readRatios))
}

// opRun is one run of BenchmarkFetchOPGeth: blocks a second, and the CPU
// time a block cost the node and this process.
type opRun struct {
	rate       float64
	node, self time.Duration
}

func meanRun(rs []opRun) opRun {
	var m opRun
	for _, r := range rs {
		m.rate += r.rate / float64(len(rs))
		m.node += r.node / time.Duration(len(rs))
		m.self += r.self / time.Duration(len(rs))
	}
	return m
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func roundList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// processCPU is the CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pidCPU is the CPU time process pid has used.
func pidCPU(b *testing.B, pid int) time.Duration {
	cpu, err := testenv.ProcessCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return cpu
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
