package fetch_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/evm/devchain/devchaintest"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

var (
	historyBlocks = flag.Int("history.blocks", 100_000, "BenchmarkHistory: blocks on the chain")
	historyMoves  = flag.Int("history.moves", 200, "BenchmarkHistory: movements of the address")
	freshSubs     = flag.Int("fresh.subs", 10_000, "BenchmarkFreshness: subscriptions")
	freshFor      = flag.Duration("fresh.for", 40*time.Second, "BenchmarkFreshness: how long the live run lasts")
)

// countingNode is a JSON-RPC proxy that counts the calls (each element of
// a batch is one) by method, and the time of the requests.
type countingNode struct {
	url   string
	mu    sync.Mutex
	calls map[string]int
	took  map[string]time.Duration
	reqs  map[string]int
}

func newCountingNode(tb testing.TB, target string) *countingNode {
	n := &countingNode{calls: make(map[string]int), took: make(map[string]time.Duration), reqs: make(map[string]int)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var one struct{ Method string }
		var many []struct{ Method string }
		n.mu.Lock()
		if json.Unmarshal(body, &many) == nil {
			for _, c := range many {
				n.calls[c.Method]++
			}
		} else if json.Unmarshal(body, &one) == nil {
			n.calls[one.Method]++
		}
		n.mu.Unlock()
		t0 := time.Now()
		defer func() {
			first := one.Method
			if len(many) > 0 {
				first = fmt.Sprintf("%s(batch)", many[0].Method)
			}
			n.mu.Lock()
			n.took[first] += time.Since(t0)
			n.reqs[first]++
			n.mu.Unlock()
		}()
		forward(w, target, body)
	}))
	tb.Cleanup(srv.Close)
	n.url = srv.URL
	return n
}

// take returns the calls counted since the last take, and their total.
func (n *countingNode) take() (map[string]int, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out, total := n.calls, 0
	for _, c := range out {
		total += c
	}
	n.calls = make(map[string]int)
	return out, total
}

// spent returns the time the node took for the requests since the last
// spent, by the (first) method of the request, and their number.
func (n *countingNode) spent() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for m, d := range n.took {
		out = append(out, fmt.Sprintf("%s %d in %s", m, n.reqs[m], d.Round(time.Millisecond)))
	}
	slices.Sort(out)
	n.took = make(map[string]time.Duration)
	n.reqs = make(map[string]int)
	return out
}

// BenchmarkHistory measures the full history of an address with
// -history.moves movements spread over -history.blocks blocks (native
// transfers to and from it, and token transfers to it), on the archive
// dev chain over HTTP JSON-RPC: RPC calls and time of --backfill-blocks
// all (a subscription synced by the fetcher) against a block-by-block
// scan of the same range (BlockScan) in the same run, and checks that
// both find the same transactions; then the same for an address that
// only receives (account 1: 267 transfers in, none out). One measurement
// whatever b.N: run it with -benchtime=1x (scripts/bench.sh history
// does).
func BenchmarkHistory(b *testing.B) {
	ctx := context.Background()
	dev := devchaintest.Start(b, devchain.Config{Archive: true, Dir: b.TempDir(), LogIndex: true})
	x := dev.Accounts[3]
	every := max(4, *historyBlocks / *historyMoves)
	t0 := time.Now()
	// Each movement in the middle of its stretch of blocks, a transfer
	// between two other accounts a quarter further; the empty blocks in
	// between are sealed in bulk (CommitEmpty), real blocks all the same.
	empty := func(n int) {
		if _, err := dev.CommitEmpty(n); err != nil {
			b.Fatal(err)
		}
	}
	sent := make(map[string]bool) // the movements' transactions
	for i := range *historyMoves {
		empty(every/2 - 1)
		var hash common.Hash
		var err error
		switch i % 3 {
		case 0:
			hash, err = dev.Transfer(ctx, 2, x, big.NewInt(int64(1000+i)))
		case 1:
			hash, err = dev.Transfer(ctx, 3, dev.Accounts[1], big.NewInt(int64(1000+i)))
		case 2:
			hash, err = dev.TransferToken(ctx, 0, x, big.NewInt(int64(1000+i)))
		}
		if err != nil {
			b.Fatal(err)
		}
		sent[strings.ToLower(hash.Hex())] = true
		dev.Commit()
		empty(every/4 - 1)
		if _, err := dev.Transfer(ctx, 0, dev.Accounts[1], big.NewInt(int64(1+i))); err != nil {
			b.Fatal(err)
		}
		dev.Commit()
		empty(every - every/2 - every/4)
	}
	head, _ := dev.Head()
	made := time.Since(t0)
	t0 = time.Now()
	// As on a node: eth_getLogs reads the log index.
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := dev.WaitLogIndex(waitCtx); err != nil {
		b.Fatal(err)
	}
	b.Logf("chain: %d blocks, %d movements of the address, made in %s, log index in %s", head, *historyMoves,
		made.Round(time.Second), time.Since(t0).Round(time.Second))

	benchHistory(ctx, b, dev.URL, head, x, dev.Accounts[1], sent)
}

// BenchmarkHistoryAnvil is BenchmarkHistory on anvil, which answers
// trace_filter: -history.moves movements of a sender over
// -history.blocks blocks (native transfers to and from it; anvil has no
// demo token), a transfer between two other accounts beside each, and
// the receiver of most of them (account 1, which never sends).
func BenchmarkHistoryAnvil(b *testing.B) {
	ctx := context.Background()
	// Archive: the state of every block, which the bisection reads.
	a := testenv.NewAnvil(b, "--max-persisted-states", strconv.Itoa(*historyBlocks+10))
	x, receiver := common.HexToAddress(a.Accounts[3]), common.HexToAddress(a.Accounts[1])
	every := max(4, *historyBlocks / *historyMoves)
	t0 := time.Now()
	mine := func(n int) {
		if n > 0 {
			if err := a.Call(ctx, nil, "anvil_mine", hexutil.EncodeUint64(uint64(n))); err != nil {
				b.Fatal(err)
			}
		}
	}
	send := func(from, to string, wei int) string {
		r, err := a.Send(ctx, map[string]any{"from": from, "to": to, "value": hexutil.EncodeUint64(uint64(wei))})
		if err != nil {
			b.Fatal(err)
		}
		return r["transactionHash"].(string)
	}
	sent := make(map[string]bool)
	for i := range *historyMoves {
		mine(every/2 - 1)
		if i%2 == 0 {
			sent[send(a.Accounts[2], a.Accounts[3], 1000+i)] = true
		} else {
			sent[send(a.Accounts[3], a.Accounts[1], 1000+i)] = true
		}
		mine(every/4 - 1)
		send(a.Accounts[0], a.Accounts[1], 1+i)
		mine(every - every/2 - every/4)
	}
	var h hexutil.Uint64
	if err := a.Call(ctx, &h, "eth_blockNumber"); err != nil {
		b.Fatal(err)
	}
	b.Logf("anvil: %d blocks, %d movements of the address, made in %s", h, *historyMoves, time.Since(t0).Round(time.Second))
	benchHistory(ctx, b, a.URL, uint64(h), x, receiver, sent)
}

// benchHistory measures, on the archive node at url whose head is head,
// the full history of sender x and of receiver (which never sent)
// against a block scan of the same range each (benchHistoryOf).
func benchHistory(ctx context.Context, b *testing.B, url string, head uint64, x, receiver common.Address, sent map[string]bool) {
	node := newCountingNode(b, url)
	src, err := evm.Dial(ctx, node.url, evm.SourceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()

	db, err := store.Open(ctx, testenv.SQLite(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	key, _, err := db.CreateAPIKey(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), BackfillAll: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.FetchOnce(ctx); err != nil { // the first checkpoint
		b.Fatal(err)
	}

	// Two addresses: x, which sends (an ordinary account), and one that
	// only receives, whose nonce is 0 at the top with no code: it could
	// be a counterfactual contract created and destroyed in one
	// transaction, which trace_filter finds where the node answers it.
	b.ResetTimer()
	for _, subject := range []struct {
		name   string
		a      common.Address
		metric string
	}{{"sender", x, ""}, {"receiver", receiver, "receiver-"}} {
		st, err := src.States(ctx, head, []string{addr(subject.a)}, true)
		if err != nil {
			b.Fatal(err)
		}
		if (st[0].Nonce == 0) != (subject.name == "receiver") {
			b.Fatalf("%s %s has nonce %d", subject.name, addr(subject.a), st[0].Nonce)
		}
		benchHistoryOf(ctx, b, node, src, db, key, f, head, subject.name, subject.a, subject.metric, sent)
	}
}

// benchHistoryOf measures the full history of a against the block scan
// of the same range, in the same run, and checks that both find the same
// transactions, among them those of sent the address took part in.
func benchHistoryOf(ctx context.Context, b *testing.B, node *countingNode, src *evm.Source, db *store.DB, key query.APIKey, f *fetch.Fetcher,
	head uint64, name string, a common.Address, metric string, sent map[string]bool) {
	node.take()
	node.spent()
	// The reference: every block read, with the Transfer logs of the
	// address by topic, and the receipts of the blocks that match.
	t0 := time.Now()
	scanned, err := evm.BlockScan{Source: src}.Backfill(ctx, 0, head, []string{addr(a)})
	if err != nil {
		b.Fatal(err)
	}
	scanTime := time.Since(t0)
	scanCalls, scanTotal := node.take()
	scanSpent := node.spent()

	// Full history as addrd does it: a late subscription, synced by the
	// fetcher with BackfillAll.
	if _, err := db.Subscribe(ctx, key.AccountID, chain, addr(a)); err != nil {
		b.Fatal(err)
	}
	t0 = time.Now()
	if err := f.FetchOnce(ctx); err != nil {
		b.Fatal(err)
	}
	histTime := time.Since(t0)
	histCalls, histTotal := node.take()
	histSpent := node.spent()

	sub, err := db.Subscription(ctx, key.AccountID, chain, addr(a))
	if err != nil || sub.State != query.StateActive || sub.HistoryStart != 0 {
		b.Fatalf("%s: subscription %+v, %v: want ACTIVE from 0", name, sub, err)
	}
	listed, err := db.AccountTransactions(ctx, key.AccountID, chain, addr(a), nil, 1000)
	if err != nil {
		b.Fatal(err)
	}
	// Both find the same transactions (in the same blocks, with the same
	// transfers), among them every movement sent.
	type found struct {
		block     uint64
		transfers int
	}
	got, want := make(map[string]found), make(map[string]found)
	for _, tx := range listed {
		got[tx.Hash] = found{tx.BlockNumber, len(tx.Transfers)}
	}
	for _, tx := range scanned {
		want[tx.Hash] = found{tx.BlockNumber, len(tx.Transfers)}
	}
	same := maps.Equal(got, want)
	if !same {
		for h, f := range want {
			if got[h] != f {
				b.Errorf("%s: the scan finds %s in block %d with %d transfers; the history: %+v", name, h, f.block, f.transfers, got[h])
			}
		}
		for h, f := range got {
			if _, ok := want[h]; !ok {
				b.Errorf("%s: the history finds %s in block %d, the scan does not", name, h, f.block)
			}
		}
		b.Fatalf("%s: history: %d transactions, scan: %d", name, len(got), len(scanned))
	}
	if name == "sender" {
		for h := range sent {
			if _, ok := got[h]; !ok {
				b.Fatalf("movement %s found by neither", h)
			}
		}
	}
	b.Logf("%s %s, block scan: %d calls in %s: %v", name, addr(a), scanTotal, scanTime.Round(time.Millisecond), sortedCalls(scanCalls))
	b.Logf("%s history:    %d calls in %s: %v", name, histTotal, histTime.Round(time.Millisecond), sortedCalls(histCalls))
	b.Logf("%s block scan requests: %v", name, scanSpent)
	b.Logf("%s history requests:    %v", name, histSpent)
	callRatio, timeRatio := float64(histTotal)/float64(scanTotal), histTime.Seconds()/scanTime.Seconds()
	b.ReportMetric(float64(scanTotal), metric+"scan-calls")
	b.ReportMetric(float64(histTotal), metric+"history-calls")
	b.ReportMetric(callRatio, metric+"ratio-calls")
	b.ReportMetric(timeRatio, metric+"ratio-time")
	b.Logf("%s: %d blocks, %d transactions of the address, identical to the scan's: %v", name, head, len(got), same)
	want5 := " (want <= 5%, <= 10%)"
	if name != "sender" {
		want5 = " (an address that never sent: want <= 3% of the calls)"
	}
	b.Logf("%s: history %d calls in %s vs block scan %d calls in %s: calls %.2f%%, time %.2f%%%s",
		name, histTotal, histTime.Round(time.Millisecond), scanTotal, scanTime.Round(time.Millisecond), 100*callRatio, 100*timeRatio, want5)
}

func sortedCalls(m map[string]int) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(out)
	return out
}

// BenchmarkFreshness runs the fetcher (Run, as addrd serve does) on the
// dev chain producing a block every 250 ms with -fresh.subs subscriptions
// and a refresh interval of a quarter of -fresh.for, and samples the age
// of the oldest balance every second: it must stay under the interval.
// Then it measures the head follower's blocks/s catching up 500 blocks
// with the refresh always due against never due, in the same run.
func BenchmarkFreshness(b *testing.B) {
	ctx := context.Background()
	// On disk: an in-memory chain that lives over a minute stalls in
	// geth's freezer (see BenchmarkHistory).
	dev := devchaintest.Start(b, devchain.Config{Accounts: 10, TxsPerBlock: 4, Archive: true, Dir: b.TempDir()})
	start, _ := dev.Head()
	interval := *freshFor / 4

	b.ResetTimer()
	// Live: blocks every 250 ms.
	db := seedSubscriptions(b, testenv.SQLite(b), dev, *freshSubs, start)
	defer db.Close()
	src, err := evm.Dial(ctx, dev.URL, evm.SourceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), Interval: 250 * time.Millisecond,
		RefreshInterval: interval, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { f.Run(runCtx) })
	var produced atomic.Int64
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
				if _, err := dev.Step(runCtx); err == nil {
					produced.Add(1)
				}
			}
		}
	})
	t0 := time.Now()
	var oldest time.Duration
	var lagged bool
	for time.Since(t0) < *freshFor {
		time.Sleep(time.Second)
		var min time.Time
		if err := db.Bun().NewRaw("SELECT MIN(updated) FROM balances WHERE chain = ?", chain).Scan(ctx, &min); err != nil {
			b.Fatal(err)
		}
		// Balances are first read when the refresh reaches them: count
		// the age from the start until then.
		if time.Since(t0) > interval {
			var unread int
			db.Bun().NewRaw("SELECT COUNT(*) FROM tracked t WHERE t.chain = ? AND NOT EXISTS (SELECT 1 FROM balances b WHERE b.chain = t.chain AND b.address = t.address)", chain).Scan(ctx, &unread)
			if unread > 0 {
				lagged = true
			}
			if age := time.Since(min.Local()); age > oldest {
				oldest = age
			}
		}
	}
	stop()
	wg.Wait()
	cp, _, _ := db.Checkpoint(ctx, chain)
	head, _ := dev.Head()
	b.Logf("live: %d blocks produced in %s, stored up to %d of %d; oldest balance %s old (refresh interval %s); addresses never read after one interval: %v",
		produced.Load(), *freshFor, cp.Number, head, oldest.Round(time.Millisecond), interval, lagged)

	// Throughput: a backlog of 2000 blocks caught up by Run (the head
	// follower with the refresh worker beside it) with a refresh interval
	// of 8 s (a round every 4 s, 10,000 balances read within 2 s each: 75
	// times the load of the default 10 minutes) against none.
	from, _ := dev.Head()
	for range 2000 {
		if _, err := dev.Step(ctx); err != nil {
			b.Fatal(err)
		}
	}
	to, _ := dev.Head()
	catchUp := func(refresh time.Duration) float64 {
		db := seedSubscriptions(b, testenv.SQLite(b), dev, *freshSubs, from)
		defer db.Close()
		f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), Batch: 16, Interval: 10 * time.Millisecond,
			RefreshInterval: refresh, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		t0 := time.Now()
		go func() { done <- f.Run(runCtx) }()
		for {
			cp, _, err := db.Checkpoint(ctx, chain)
			if err != nil {
				b.Fatal(err)
			}
			if cp.Number >= to {
				break
			}
			time.Sleep(10 * time.Millisecond) // polling the measured run, not synchronising a test
		}
		took := time.Since(t0)
		stop()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		rate := float64(to-from) / took.Seconds()
		refreshed := 0
		db.Bun().NewRaw("SELECT COUNT(DISTINCT address) FROM balances WHERE chain = ?", chain).Scan(ctx, &refreshed)
		b.Logf("catch-up with refresh interval %s: %.1f blocks/s, %d addresses with balances read, in %s", refresh, rate, refreshed, took.Round(time.Millisecond))
		if refresh < time.Hour && refreshed < *freshSubs/2 {
			b.Fatalf("the refresh read %d of %d addresses during the catch-up: it did not really run", refreshed, *freshSubs)
		}
		return rate
	}
	never1 := catchUp(24 * time.Hour)
	always1 := catchUp(8 * time.Second)
	always2 := catchUp(8 * time.Second)
	never2 := catchUp(24 * time.Hour)
	b.StopTimer()
	never, always := (never1+never2)/2, (always1+always2)/2
	b.ReportMetric(oldest.Seconds(), "oldest-balance-s")
	b.ReportMetric(always/never, "ratio-blocks/s")
	fmt.Printf("freshness: %d subscriptions, a block every 250 ms: oldest balance %s with a refresh interval of %s (want below it)\n",
		*freshSubs, oldest.Round(time.Millisecond), interval)
	fmt.Printf("freshness: head follower %.1f blocks/s with the refresh running (runs %.1f, %.1f) vs %.1f without (%.1f, %.1f): ratio %.2f (want >= 0.9)\n",
		always, always1, always2, never, never1, never2, always/never)
}
