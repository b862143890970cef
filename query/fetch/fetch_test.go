package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

func (e *env) fetch() {
	e.t.Helper()
	if err := e.f.FetchOnce(context.Background()); err != nil {
		e.t.Fatalf("FetchOnce: %v", err)
	}
}

// catchUp calls FetchOnce until the checkpoint reaches the confirmed head.
func (e *env) catchUp() {
	e.t.Helper()
	for range 100 {
		e.fetch()
		cp, ok, err := e.db.Checkpoint(context.Background(), chain)
		if err != nil {
			e.t.Fatal(err)
		}
		head, _ := e.dev.Head()
		if ok && cp.Number+e.cfg.Confirmations >= head {
			return
		}
	}
	e.t.Fatal("fetcher did not catch up in 100 steps")
}

func (e *env) subscribe(a common.Address) {
	e.t.Helper()
	if _, err := e.db.Subscribe(context.Background(), e.account, chain, addr(a)); err != nil {
		e.t.Fatal(err)
	}
}

// trackThenDrop subscribes a, stores a movement of it while tracked (its
// statement has a row) and unsubscribes it: an earlier tracking.
func (e *env) trackThenDrop(a common.Address) {
	e.t.Helper()
	ctx := context.Background()
	e.subscribe(a)
	e.fetch()
	e.must(e.dev.Transfer(ctx, 0, e.dev.Accounts[1], big.NewInt(77)))
	e.dev.Commit()
	e.fetch()
	if err := e.db.Unsubscribe(ctx, e.account, chain, addr(a)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) txs(a common.Address) []query.Transaction {
	e.t.Helper()
	txs, err := e.db.Transactions(context.Background(), chain, addr(a), nil, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return txs
}

func (e *env) balances(a common.Address) map[string]string {
	e.t.Helper()
	bals, err := e.db.Balances(context.Background(), chain, addr(a))
	if err != nil {
		e.t.Fatal(err)
	}
	out := make(map[string]string)
	for _, b := range bals {
		out[b.Asset+b.Contract] = b.Amount.String()
	}
	return out
}

// nodeBalance reads what the node says a's balance is now.
func (e *env) nodeBalance(a common.Address, contract string) string {
	e.t.Helper()
	head, _ := e.dev.Head()
	bals, err := e.src.Balances(context.Background(), head-e.cfg.Confirmations, []query.BalanceQuery{{Address: addr(a), Contract: contract}})
	if err != nil || len(bals) != 1 {
		e.t.Fatalf("node balance: %v %v", bals, err)
	}
	return bals[0].Amount.String()
}

// logIndex is the index in its block of the one log of transaction hash,
// as the node's receipt says: where the transaction lands in its block is
// the payload builder's choice.
func (e *env) logIndex(hash string) int {
	e.t.Helper()
	c, err := ethclient.Dial(e.dev.URL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	r, err := c.TransactionReceipt(context.Background(), common.HexToHash(hash))
	if err != nil || len(r.Logs) != 1 {
		e.t.Fatalf("receipt of %s: %v, %v", hash, r, err)
	}
	return int(r.Logs[0].Index)
}

// mine commits blocks until the transactions hashes are all mined: the
// payload builder may leave a transaction sent last for the next block.
func (e *env) mine(hashes ...string) {
	e.t.Helper()
	for range 5 {
		e.dev.Commit()
		left := 0
		for _, h := range hashes {
			if !e.dev.Mined(context.Background(), common.HexToHash(h)) {
				left++
			}
		}
		if left == 0 {
			return
		}
	}
	e.t.Fatalf("transactions %v not mined in 5 blocks", hashes)
}

func (e *env) must(h common.Hash, err error) string {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
	return h.Hex()
}

func addr(a common.Address) string { return strings.ToLower(a.Hex()) }

func byHash(txs []query.Transaction) map[string]query.Transaction {
	m := make(map[string]query.Transaction, len(txs))
	for _, t := range txs {
		m[t.Hash] = t
	}
	return m
}

func TestFetchTransfers(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{})
		d := e.dev
		a, b, c, x := d.Accounts[0], d.Accounts[1], d.Accounts[2], d.Accounts[3]
		e.subscribe(a)
		e.fetch()

		native := e.must(d.Transfer(ctx, 0, b, big.NewInt(12345)))
		token := e.must(d.TransferToken(ctx, 1, a, big.NewInt(777)))
		failed := e.must(d.FailingTransfer(ctx, 0))
		other := e.must(d.Transfer(ctx, 2, x, big.NewInt(5))) // touches no tracked address
		e.mine(native, token, failed, other)
		e.catchUp()

		got := byHash(e.txs(a))
		if _, ok := got[other]; ok {
			t.Errorf("stored %s, a transaction between untracked %s and %s", other, c, x)
		}
		for _, tc := range []struct {
			name, hash, status string
			transfers          []query.Transfer
		}{
			{"Native", native, query.StatusSuccess, []query.Transfer{
				{Position: -1, Asset: query.AssetNative, From: addr(a), To: addr(b), Amount: query.AmountOf(12345), Kind: query.KindTransaction,
					Symbol: "ETH", Decimals: 18}}},
			{"Token", token, query.StatusSuccess, []query.Transfer{
				{Position: e.logIndex(token), Asset: query.AssetERC20, Contract: addr(d.Token), From: addr(b), To: addr(a), Amount: query.AmountOf(777),
					Kind: query.KindToken, Symbol: "WDT", Name: "Wharf Demo Token", Decimals: 18}}},
			{"Failed", failed, query.StatusFailed, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tx, ok := got[tc.hash]
				if !ok {
					t.Fatalf("transaction %s not stored for %s", tc.hash, a)
				}
				if tx.Status != tc.status {
					t.Errorf("status = %s, want %s", tx.Status, tc.status)
				}
				if tx.Fee.Sign() <= 0 {
					t.Errorf("fee = %s, want a positive amount", tx.Fee)
				}
				if tx.BlockHash != d.BlockHash(tx.BlockNumber).Hex() {
					t.Errorf("block hash %s is not the canonical %s", tx.BlockHash, d.BlockHash(tx.BlockNumber).Hex())
				}
				full, err := e.db.Transaction(ctx, chain, tc.hash)
				if err != nil {
					t.Fatal(err)
				}
				if len(full.Transfers) != len(tc.transfers) {
					t.Fatalf("transfers = %+v, want %+v", full.Transfers, tc.transfers)
				}
				for i := range tc.transfers {
					if full.Transfers[i] != tc.transfers[i] {
						t.Errorf("transfer %d = %+v, want %+v", i, full.Transfers[i], tc.transfers[i])
					}
				}
			})
		}
		bals := e.balances(a)
		if got, want := bals[query.AssetNative], e.nodeBalance(a, ""); got != want {
			t.Errorf("native balance = %s, want %s", got, want)
		}
		if got, want := bals[query.AssetERC20+addr(d.Token)], e.nodeBalance(a, addr(d.Token)); got != want {
			t.Errorf("token balance = %s, want %s", got, want)
		}
	})
}

func TestFetchConfirmations(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testenv.SQLite(t), fetch.Config{Confirmations: 2})
	d := e.dev
	a := d.Accounts[0]
	e.subscribe(a)
	e.fetch()
	hash := e.must(d.Transfer(ctx, 1, a, big.NewInt(1)))
	d.Commit()
	for i, want := range []bool{false, false, true} {
		e.fetch()
		if _, ok := byHash(e.txs(a))[hash]; ok != want {
			t.Errorf("with %d confirmations: stored = %v, want %v", i, ok, want)
		}
		d.Commit()
	}
}

func TestFetchReorg(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{})
		d := e.dev
		a, b := d.Accounts[0], d.Accounts[1]
		e.subscribe(a)
		e.subscribe(b)
		e.fetch()
		forkAt, parent := d.Head()
		old := e.must(d.Transfer(ctx, 0, b, big.NewInt(111)))
		d.Commit()
		e.must(d.Transfer(ctx, 0, b, big.NewInt(112)))
		oldHead := d.Commit()
		e.catchUp()
		if _, ok := byHash(e.txs(a))[old]; !ok {
			t.Fatalf("before the reorg: %s not stored", old)
		}

		// A side chain from forkAt, one block longer, with another transfer.
		if err := d.Fork(parent); err != nil {
			t.Fatal(err)
		}
		replacement := e.must(d.Transfer(ctx, 2, a, big.NewInt(222)))
		d.Commit()
		d.Commit()
		d.Commit()
		e.catchUp()

		if got := testutil.ToFloat64(reorgs(t, e.reg)); got != 1 {
			t.Errorf("reorgs_total = %v, want 1", got)
		}
		txs := e.txs(a)
		if _, ok := byHash(txs)[replacement]; !ok {
			t.Errorf("transaction %s of the new chain not stored", replacement)
		}
		for _, tx := range txs {
			if canonical := d.BlockHash(tx.BlockNumber).Hex(); tx.BlockHash != canonical {
				t.Errorf("tx %s stored in block %d %s, not the canonical %s", tx.Hash, tx.BlockNumber, tx.BlockHash, canonical)
			}
			if tx.BlockHash == oldHead.Hex() {
				t.Errorf("tx %s still in the dropped block", tx.Hash)
			}
		}
		head, _ := d.Head()
		for n := forkAt; n <= head; n++ {
			stored, err := e.db.StoredBlock(ctx, chain, n)
			if err != nil {
				t.Fatalf("block %d: %v", n, err)
			}
			if stored.Hash != d.BlockHash(n).Hex() {
				t.Errorf("stored block %d = %s, want %s", n, stored.Hash, d.BlockHash(n).Hex())
			}
		}
		if got, want := e.balances(a)[query.AssetNative], e.nodeBalance(a, ""); got != want {
			t.Errorf("native balance after the reorg = %s, want %s", got, want)
		}
	})
}

// reorgs finds the fetcher's reorg counter in reg.
func reorgs(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	return metric(t, reg, "addrd_fetch_reorgs_total")
}

// metric returns a collector that reports the one sample of name in reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "v", Help: "v"}, func() float64 { return v })
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// crashingStore stores a number of blocks, then fails, as a process
// killed in the middle of a step: a batch is cut where the process died,
// the blocks before committed, the rest never.
type crashingStore struct {
	fetch.Store
	left atomic.Int64
}

var errCrash = errors.New("killed")

func (s *crashingStore) StoreBlocks(ctx context.Context, chain string, blocks []query.BlockData) error {
	left := s.left.Load()
	n := min(int64(len(blocks)), max(left, 0))
	s.left.Store(left - n)
	if n > 0 {
		if err := s.Store.StoreBlocks(ctx, chain, blocks[:n]); err != nil {
			return err
		}
	}
	if n < int64(len(blocks)) {
		return errCrash
	}
	return nil
}

func TestFetchRestart(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{Batch: 4})
		d := e.dev
		a := d.Accounts[0]
		e.subscribe(a)
		e.fetch()
		start, _ := d.Head()
		want := make(map[string]bool)
		for i := range 12 {
			if i%3 == 0 { // and internal payouts to a, which only traces see
				h, err := d.Forward(ctx, 1, []common.Address{a}, big.NewInt(int64(1000+i)))
				if err != nil {
					t.Fatal(err)
				}
				want[strings.ToLower(h.Hex())] = true
			}
			if _, err := d.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// The first process stores two blocks of its batch of four, then dies.
		crash := &crashingStore{Store: e.db}
		crash.left.Store(2)
		e.newFetcher(crash)
		if err := e.f.FetchOnce(ctx); !errors.Is(err, errCrash) {
			t.Fatalf("FetchOnce = %v, want the crash", err)
		}
		cp, _, err := e.db.Checkpoint(ctx, chain)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Number != start+2 {
			t.Fatalf("checkpoint after the crash = %d, want %d", cp.Number, start+2)
		}
		// A new process over the same database continues.
		e.open()
		e.newFetcher(e.db)
		e.catchUp()

		head, _ := d.Head()
		blocks, err := e.src.Blocks(ctx, start+1, head)
		if err != nil {
			t.Fatal(err)
		}
		logs, err := e.src.Transfers(ctx, start+1, head, []string{addr(a)})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			for _, tx := range b.Txs {
				if tx.From == addr(a) || tx.To == addr(a) {
					want[tx.Hash] = true
				}
			}
		}
		for _, l := range logs {
			want[l.TxHash] = true
		}
		seen := make(map[string]int)
		for _, tx := range e.txs(a) {
			if tx.BlockNumber > start {
				seen[tx.Hash]++
			}
		}
		for h := range want {
			if seen[h] != 1 {
				t.Errorf("transaction %s stored %d times, want once", h, seen[h])
			}
		}
		for h := range seen {
			if !want[h] {
				t.Errorf("transaction %s stored but does not touch %s", h, a)
			}
		}
		if len(want) == 0 {
			t.Fatal("the demo blocks touched nothing; the test proves nothing")
		}
		// The statement, internal payouts included, is whole and adds up.
		kinds := checkStatement(t, e.db, e.src, e.account, []string{addr(a)})
		if n := len(kinds[addr(a)][query.KindInternal]); n != 4 {
			t.Errorf("%d internal payouts in the statement, want 4", n)
		}
	})
}

func TestFetchNewSubscription(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		e := newEnv(t, dsn, fetch.Config{BackfillBlocks: 8})
		d := e.dev
		a, b := d.Accounts[0], d.Accounts[1]
		e.subscribe(a)
		e.fetch()
		early := e.must(d.TransferToken(ctx, 2, b, big.NewInt(3))) // touches no tracked address yet
		d.Commit()
		for range 5 {
			d.Commit()
		}
		e.catchUp()
		if got := e.balances(b); len(got) != 0 {
			t.Fatalf("balances of %s before subscribing: %v", b, got)
		}

		e.subscribe(b)
		e.fetch() // one step
		bals := e.balances(b)
		if got, want := bals[query.AssetNative], e.nodeBalance(b, ""); got != want {
			t.Errorf("native balance after one step = %q, want %s", got, want)
		}
		if got, want := bals[query.AssetERC20+addr(d.Token)], e.nodeBalance(b, addr(d.Token)); got != want {
			t.Errorf("token balance after one step = %q, want %s", got, want)
		}
		if _, ok := byHash(e.txs(b))[early]; !ok {
			t.Errorf("transfer %s in the backfill window not backfilled", early)
		}
	})
}

func TestFetchResubscribeFillsGap(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		// A backfill window too short to cover the gap: only the gap fill does.
		e := newEnv(t, dsn, fetch.Config{BackfillBlocks: 1})
		d := e.dev
		a := d.Accounts[0]
		e.trackThenDrop(a)
		var gap []string
		for i := range 6 {
			gap = append(gap, e.must(d.Transfer(ctx, 1+i%3, a, big.NewInt(int64(1000+i)))))
			d.Commit()
			e.fetch()
		}
		if _, ok := byHash(e.txs(a))[gap[0]]; ok {
			t.Fatalf("stored %s while nobody was subscribed", gap[0])
		}
		e.subscribe(a)
		e.fetch()
		got := byHash(e.txs(a))
		for _, h := range gap {
			if _, ok := got[h]; !ok {
				t.Errorf("transfer %s in the gap not filled", h)
			}
		}
		// The gap's statement rows meet the earlier statement: every row
		// chained and equal to the node's balance after its block, one at
		// each transfer of the gap.
		checkStatement(t, e.db, e.src, e.account, []string{addr(a)})
		rows := make(map[uint64]bool)
		for _, r := range native(statementOf(t, e.db, e.account, addr(a))) {
			rows[r.Block] = true
		}
		for _, h := range gap {
			if !rows[got[h].BlockNumber] {
				t.Errorf("no statement row at block %d of the gap's transfer %s", got[h].BlockNumber, h)
			}
		}
	})
}

// countingSource records the calls to the node.
type countingSource struct {
	query.Source
	mu  sync.Mutex
	log []string
}

func (s *countingSource) note(format string, args ...any) {
	s.mu.Lock()
	s.log = append(s.log, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *countingSource) Head(ctx context.Context) (uint64, error) {
	s.note("head")
	return s.Source.Head(ctx)
}

func (s *countingSource) Blocks(ctx context.Context, from, to uint64) ([]query.SourceBlock, error) {
	s.note("blocks %d-%d", from, to)
	return s.Source.Blocks(ctx, from, to)
}

func (s *countingSource) Transfers(ctx context.Context, from, to uint64, addrs []string) ([]query.TokenTransfer, error) {
	s.note("transfers %d-%d", from, to)
	return s.Source.Transfers(ctx, from, to, addrs)
}

func (s *countingSource) Receipts(ctx context.Context, b query.Block, hashes []string) ([]query.Receipt, error) {
	s.note("receipts %d", b.Number)
	return s.Source.Receipts(ctx, b, hashes)
}

func (s *countingSource) BlockReceipts(ctx context.Context, b query.Block) ([]query.Receipt, []query.TokenTransfer, error) {
	s.note("blockreceipts %d", b.Number)
	return s.Source.BlockReceipts(ctx, b)
}

func (s *countingSource) Balances(ctx context.Context, at uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
	s.note("balances %d x%d", at, len(qs))
	return s.Source.Balances(ctx, at, qs)
}

// TestFetchCostIndependentOfSubscriptions checks that scanning the same
// blocks of one chain costs the same calls to the node with 2 tracked
// addresses as with 2 and 2,000 idle ones (a block's receipts read whole
// or in part count alike). Both stores start at the same
// checkpoint and fetch the same 20 blocks.
func TestFetchCostIndependentOfSubscriptions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, testenv.SQLite(t), fetch.Config{SyncBatch: 5000})
	d := e.dev
	busy, err := store.Open(ctx, testenv.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	stores := map[int]*store.DB{0: e.db, 2000: busy}
	for idle, db := range stores {
		key, _, err := db.CreateAPIKey(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range d.Accounts[:2] {
			if _, err := db.Subscribe(ctx, key.AccountID, chain, addr(a)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range idle {
			if _, err := db.Subscribe(ctx, key.AccountID, chain, fmt.Sprintf("0x%040x", i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	fetcher := func(db *store.DB, src query.Source) *fetch.Fetcher { return e.fetcher(db, src, e.cfg) }
	for _, db := range stores {
		// The first checkpoint and the sync of every subscription.
		if err := fetcher(db, e.src).FetchOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	calls := make(map[int][]string)
	for idle, db := range stores {
		src := &countingSource{Source: e.src}
		if err := fetcher(db, src).FetchOnce(ctx); err != nil {
			t.Fatal(err)
		}
		for i, c := range src.log {
			// One read of a block's receipts either way: the family reads
			// a matched block's receipts whole when it filtered the logs
			// by the few tracked addresses, only the matched ones' when
			// it did not.
			src.log[i] = strings.Replace(c, "blockreceipts ", "receipts ", 1)
		}
		slices.Sort(src.log)
		calls[idle] = src.log
	}
	if len(calls[0]) < 20 {
		t.Fatalf("%d calls to the node for 20 blocks with 2 subscriptions, want some per block: %q", len(calls[0]), calls[0])
	}
	if !slices.Equal(calls[0], calls[2000]) {
		t.Errorf("calls to the node for 20 blocks:\nwith 2 subscriptions     %q\nwith 2,002 subscriptions %q", calls[0], calls[2000])
	}
}

// TestFetcherRun: behind by more than a batch, Run steps again at once;
// caught up, it waits Interval; failing, it backs off, doubling up to
// MaxBackoff. The test clock hands it every wait of the steps, and the
// test decides when each ends (the refresher's waits, minutes, never end:
// the test is about the steps).
func TestFetcherRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := testenv.NewClock(time.Now())
	const interval = time.Second
	e := newEnv(t, testenv.SQLite(t), fetch.Config{Clock: clk, Interval: interval, MaxBackoff: 3 * interval, Batch: 2})
	d := e.dev
	a := d.Accounts[0]
	e.subscribe(a)
	e.fetch()
	for range 3 {
		d.Commit()
	}
	done := make(chan error, 1)
	go func() { done <- e.f.Run(ctx) }()

	// Behind by more than a batch, Run steps again at once; caught up, it
	// waits Interval; failing, it backs off, doubling up to MaxBackoff.
	if got := clk.NextAfter(t, time.Minute); got != interval {
		t.Fatalf("first wait = %s, want %s once caught up", got, interval)
	}
	head, _ := d.Head()
	if cp, _, _ := e.db.Checkpoint(ctx, chain); cp.Number != head {
		t.Fatalf("checkpoint = %d, want the head %d", cp.Number, head)
	}
	hash := e.must(d.Transfer(ctx, 1, a, big.NewInt(7)))
	d.Commit()
	if err := d.StopHTTP(); err != nil {
		t.Fatal(err)
	}
	prev := interval // the wait under way
	for _, want := range []time.Duration{interval, 2 * interval, 3 * interval, 3 * interval} {
		clk.Advance(prev)
		prev = want
		if got := clk.NextAfter(t, time.Minute); got != want {
			t.Fatalf("wait with the node down = %s, want %s", got, want)
		}
	}
	if e.f.Health() == nil {
		t.Error("Health = nil with the node down")
	}
	if err := d.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(prev)
	if got := clk.NextAfter(t, time.Minute); got != interval {
		t.Fatalf("wait after the node came back = %s, want %s", got, interval)
	}
	if _, ok := byHash(e.txs(a))[hash]; !ok {
		t.Errorf("transfer %s not stored after the node came back", hash)
	}
	if err := e.f.Health(); err != nil {
		t.Errorf("Health = %v after the node came back", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil after cancel", err)
	}
}

func TestFetchHealthNodeLags(t *testing.T) {
	e := newEnv(t, testenv.SQLite(t), fetch.Config{Clock: testenv.NewClock(time.Now().Add(2 * time.Hour)), LagAfter: time.Hour})
	e.subscribe(e.dev.Accounts[0])
	e.fetch()
	err := e.f.Health()
	if err == nil || !strings.Contains(err.Error(), "lags") {
		t.Fatalf("Health with a newest block 2 h old = %v, want the node lagging", err)
	}
}
