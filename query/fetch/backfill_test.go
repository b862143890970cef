package fetch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/fetch"
)

// history is a dev chain where demo account 3 (X) has a history spread
// over blocks, with other traffic between, and a store to backfill it in.
type history struct {
	*env
	x    string
	sent map[string]uint64 // hashes of X's transactions sent, by block
	// internal are the hashes of the payouts to X through the forwarder,
	// which a scan without traces does not see.
	internal []string
}

// newHistory builds n blocks after the token's two: every 25th holds a
// transfer from X, every 25th (offset) one to X and a token transfer to
// X, every 25th (another offset) a payout to X through the forwarder
// contract (an internal transfer, seen in traces only); the others a
// transfer between accounts 0 and 1.
func newHistory(t *testing.T, archive bool, n int) *history {
	t.Helper()
	ctx := context.Background()
	e := newEnvOn(t, devchain.Config{Archive: archive}, testenv.SQLite(t), fetch.Config{})
	dev := e.dev
	h := &history{env: e, x: addr(dev.Accounts[3]), sent: make(map[string]uint64)}
	send := func(hash common.Hash, err error) common.Hash {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return hash
	}
	client, err := ethclient.Dial(dev.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for i := range n {
		var mine []common.Hash
		switch i % 25 {
		case 7:
			mine = append(mine, send(dev.Transfer(ctx, 3, dev.Accounts[1], big.NewInt(int64(1000+i)))))
		case 19:
			mine = append(mine, send(dev.Transfer(ctx, 2, dev.Accounts[3], big.NewInt(int64(5000+i)))),
				send(dev.TransferToken(ctx, 0, dev.Accounts[3], big.NewInt(int64(7+i)))))
		case 13:
			hash := send(dev.Forward(ctx, 0, []common.Address{dev.Accounts[3]}, big.NewInt(int64(3000+i))))
			mine = append(mine, hash)
			h.internal = append(h.internal, strings.ToLower(hash.Hex()))
		default:
			send(dev.Transfer(ctx, 0, dev.Accounts[1], big.NewInt(int64(1+i))))
		}
		dev.Commit()
		for _, hash := range mine {
			if !dev.Mined(ctx, hash) {
				t.Fatalf("transaction %s not mined", hash)
			}
			r, err := client.TransactionReceipt(ctx, hash)
			if err != nil {
				t.Fatal(err)
			}
			h.sent[strings.ToLower(hash.Hex())] = r.BlockNumber.Uint64()
		}
	}
	// The token's distribution to X, found by its Transfer log: it is
	// sealed in block 2 as a rule, but a block later when the dev chain
	// seals it late under load, so its block is read, not assumed.
	logs, err := client.FilterLogs(ctx, ethereum.FilterQuery{
		Addresses: []common.Address{dev.Token},
		Topics: [][]common.Hash{{crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))},
			nil, {common.BytesToHash(dev.Accounts[3].Bytes())}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if hash := strings.ToLower(l.TxHash.Hex()); h.sent[hash] == 0 {
			h.sent[hash] = l.BlockNumber
		}
	}
	return h
}

// listed returns the blocks of X's transactions as alice reads them, by
// hash, failing on a duplicate.
func (h *history) listed() map[string]uint64 {
	h.t.Helper()
	txs, err := h.db.AccountTransactions(context.Background(), h.account, chain, h.x, nil, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make(map[string]uint64)
	for _, tx := range txs {
		if _, dup := out[tx.Hash]; dup {
			h.t.Fatalf("transaction %s listed twice", tx.Hash)
		}
		out[tx.Hash] = tx.BlockNumber
	}
	return out
}

// want returns the transactions that touch X from block from on, the
// token's distribution to X included.
func (h *history) want(from uint64) map[string]uint64 {
	out := make(map[string]uint64)
	for hash, b := range h.sent {
		if b >= from {
			out[hash] = b
		}
	}
	return out
}

func (h *history) subscription() query.Subscription {
	h.t.Helper()
	sub, err := h.db.Subscription(context.Background(), h.account, chain, h.x)
	if err != nil {
		h.t.Fatal(err)
	}
	return sub
}

// sameSet fails unless every transaction wanted is listed, and nothing
// else is.
func (h *history) sameSet(got, want map[string]uint64, from uint64) {
	h.t.Helper()
	for hash, b := range want {
		if got[hash] != b {
			h.t.Errorf("transaction %s of block %d not listed", hash, b)
		}
	}
	for hash, b := range got {
		if _, ok := want[hash]; !ok {
			h.t.Errorf("transaction %s of block %d listed, not sent to or from X", hash, b)
		}
		if b < from {
			h.t.Errorf("transaction %s of block %d listed, before the history start %d", hash, b, from)
		}
	}
}

// TestBackfillHistory subscribes X late: with BackfillAll its whole
// history is listed, exactly what the block-by-block scan finds; with a
// window, exactly the window's.
func TestBackfillHistory(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, true, 400)
	head, _ := h.dev.Head()

	f := h.fetcher(h.db, h.fault, fetch.Config{BackfillAll: true, BackfillSlice: 64})
	if err := f.FetchOnce(ctx); err != nil { // the first checkpoint, at the head
		t.Fatal(err)
	}
	if _, err := h.db.Subscribe(ctx, h.account, chain, h.x); err != nil {
		t.Fatal(err)
	}
	if sub := h.subscription(); sub.State != query.StateSyncing || sub.Covered {
		t.Fatalf("subscribed: %+v, want SYNCING, nothing covered", sub)
	}
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if sub := h.subscription(); sub.State != query.StateActive || !sub.Covered || sub.HistoryStart != 0 {
		t.Fatalf("after the backfill: %+v, want ACTIVE from 0", sub)
	}
	got := h.listed()
	h.sameSet(got, h.want(0), 0)

	// The block-by-block scan of the same range finds the same.
	scan, err := evm.BlockScan{Source: h.src}.Backfill(ctx, 0, head, []string{h.x})
	if err != nil {
		t.Fatal(err)
	}
	scanned := make(map[string]uint64)
	for _, tx := range scan {
		scanned[tx.Hash] = tx.BlockNumber
	}
	// The scan reads no traces: the payouts through the forwarder are the
	// history's alone (its search sees them move X's balance).
	for _, hash := range h.internal {
		if _, ok := scanned[hash]; ok {
			t.Errorf("the scan without traces finds the internal payout %s", hash)
		}
		scanned[hash] = got[hash]
	}
	if len(h.internal) == 0 {
		t.Fatal("the history holds no internal payout")
	}
	if len(scanned) != len(got) {
		t.Errorf("history lists %d transactions, the block scan %d", len(got), len(scanned))
	}
	for hash, b := range scanned {
		if got[hash] != b {
			t.Errorf("the scan finds %s in block %d, the history does not", hash, b)
		}
	}
	h.coherent(0)
	// The token transfers are stored whole, with their log.
	for _, tx := range scan {
		stored, err := h.db.Transaction(ctx, chain, tx.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored.Transfers) != len(tx.Transfers) {
			t.Errorf("%s stored with %d transfers, the scan sees %d", tx.Hash, len(stored.Transfers), len(tx.Transfers))
		}
	}
}

// coherent fails unless X's statement covers exactly what its
// transactions do, from block from to the checkpoint: a native row at the
// block of each transaction listed, a row wherever the node's balance of
// X changed and nowhere else, the oldest opening at the node's balance
// before from (nothing before the genesis, whose allocation is a row),
// every row chained, reconciled and equal to the node's balance after its
// block (checkStatement).
func (h *history) coherent(from uint64) {
	h.t.Helper()
	ctx := context.Background()
	src := h.src
	checkStatement(h.t, h.db, src, h.account, []string{h.x})
	cp, _, err := h.db.Checkpoint(ctx, chain)
	if err != nil {
		h.t.Fatal(err)
	}
	all := statementOf(h.t, h.db, h.account, h.x)
	any := make(map[uint64]bool)
	for _, r := range all {
		any[r.Block] = true
		if r.Block < from {
			h.t.Errorf("statement row of block %d, before the history start %d", r.Block, from)
		}
	}
	for hash, b := range h.listed() {
		if !any[b] {
			h.t.Errorf("transaction %s of block %d listed, no statement row there", hash, b)
		}
	}
	rows := native(all)
	byBlock := make(map[uint64]query.BalanceChange)
	for _, r := range rows {
		byBlock[r.Block] = r
	}
	balance := func(at uint64) string {
		h.t.Helper()
		bals, err := src.Balances(ctx, at, []query.BalanceQuery{{Address: h.x}})
		if err != nil || len(bals) != 1 {
			h.t.Fatalf("balance of X at %d: %v %v", at, bals, err)
		}
		return bals[0].Amount.String()
	}
	prev := "0"
	if from > 0 {
		prev = balance(from - 1)
	}
	for b := from; b <= cp.Number; b++ {
		now := balance(b)
		if _, ok := byBlock[b]; ok != (now != prev) {
			h.t.Errorf("block %d: X's balance %s -> %s, statement row: %v", b, prev, now, ok)
		}
		prev = now
	}
	if from == 0 && (len(rows) == 0 || rows[len(rows)-1].Causes[0].Kind != query.KindGenesis) {
		h.t.Errorf("a statement from block 0 does not start with the genesis allocation: %+v", rows)
	}
}

// TestBackfillWindow: a window lists the window's transactions, none
// before, even those stored earlier because another address was tracked.
func TestBackfillWindow(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, false, 300)
	// Bob has tracked account 2 (which pays X) from the start: its
	// transactions with X are stored, before X's window too.
	bob, _, err := h.db.CreateAPIKey(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	two := addr(h.dev.Accounts[2])
	if _, err := h.db.Subscribe(ctx, bob.AccountID, chain, two); err != nil {
		t.Fatal(err)
	}
	f := h.fetcher(h.db, h.fault, fetch.Config{BackfillBlocks: 1000})
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	const window = 100
	f = h.fetcher(h.db, h.fault, fetch.Config{BackfillBlocks: window})
	if _, err := h.db.Subscribe(ctx, h.account, chain, h.x); err != nil {
		t.Fatal(err)
	}
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	cp, _, err := h.db.Checkpoint(ctx, chain)
	if err != nil {
		t.Fatal(err)
	}
	from := cp.Number + 1 - window
	if sub := h.subscription(); sub.State != query.StateActive || sub.HistoryStart != from {
		t.Fatalf("%+v, want ACTIVE from %d", sub, from)
	}
	h.sameSet(h.listed(), h.want(from), from)
	h.coherent(from)
}

// TestBackfillManyTraced: a window backfill of more addresses than it
// has blocks reads every block with its traces (a search by state would
// cost more), and still lists the payouts to X through a contract and
// writes X's statement.
func TestBackfillManyTraced(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, true, 120)
	f := h.fetcher(h.db, h.fault, fetch.Config{BackfillBlocks: 100})
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Subscribe(ctx, h.account, chain, h.x); err != nil {
		t.Fatal(err)
	}
	for i := range 300 { // more addresses than the window's blocks
		if _, err := h.db.Subscribe(ctx, h.account, chain, fmt.Sprintf("0x%040x", 0xbeef0000+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	cp, _, err := h.db.Checkpoint(ctx, chain)
	if err != nil {
		t.Fatal(err)
	}
	from := cp.Number + 1 - 100
	if sub := h.subscription(); sub.State != query.StateActive || sub.HistoryStart != from {
		t.Fatalf("%+v, want ACTIVE from %d", sub, from)
	}
	got := h.listed()
	h.sameSet(got, h.want(from), from)
	payouts := 0
	for _, hash := range h.internal {
		if _, ok := got[hash]; ok {
			payouts++
		}
	}
	if payouts == 0 {
		t.Fatal("no payout through the forwarder in the window: the test tests nothing")
	}
	h.coherent(from)
}

// TestBackfillNoState: on a node without the state of old blocks, "all"
// says so and backfills the window.
func TestBackfillNoState(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, false, 300)
	f := h.fetcher(h.db, h.fault, fetch.Config{BackfillAll: true, BackfillBlocks: 50})
	logs := h.log
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Subscribe(ctx, h.account, chain, h.x); err != nil {
		t.Fatal(err)
	}
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	cp, _, _ := h.db.Checkpoint(ctx, chain)
	from := cp.Number + 1 - 50
	if sub := h.subscription(); sub.State != query.StateActive || sub.HistoryStart != from {
		t.Fatalf("%+v, want ACTIVE from %d (the window)", sub, from)
	}
	h.sameSet(h.listed(), h.want(from), from)
	if !strings.Contains(logs.String(), "needs an archive node") {
		t.Fatalf("no message about the missing state in the log:\n%s", logs.String())
	}
}

// killedBackfill stores a number of backfill slices, then fails, as a
// process killed in the middle of a backfill.
type killedBackfill struct {
	fetch.Store
	left atomic.Int64
}

func (s *killedBackfill) StoreBackfill(ctx context.Context, chain string, job query.BackfillJob, txs []query.Transaction, changes []query.BalanceChange, next int64) error {
	if s.left.Add(-1) < 0 {
		return errCrash
	}
	return s.Store.StoreBackfill(ctx, chain, job, txs, changes, next)
}

// TestBackfillKilled kills the process halfway through a full-history
// backfill, and once more after the subscription was deleted and made
// again: a new process resumes where the last slice stored, and the list
// ends complete, without duplicates.
func TestBackfillKilled(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, true, 400)
	cfg := fetch.Config{BackfillAll: true, BackfillSlice: 50}
	if err := h.fetcher(h.db, h.fault, cfg).FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Subscribe(ctx, h.account, chain, h.x); err != nil {
		t.Fatal(err)
	}
	kill := &killedBackfill{Store: h.db}
	kill.left.Store(2)
	if err := h.fetcher(kill, h.fault, cfg).FetchOnce(ctx); !errors.Is(err, errCrash) {
		t.Fatalf("FetchOnce = %v, want the crash", err)
	}
	sub := h.subscription()
	if sub.State != query.StateSyncing || !sub.Covered || sub.HistoryStart == 0 {
		t.Fatalf("killed halfway: %+v, want SYNCING, covered from above 0", sub)
	}
	h.sameSet(h.listed(), h.want(sub.HistoryStart), sub.HistoryStart)

	// The subscription is deleted while it syncs, and made again.
	if err := h.db.Unsubscribe(ctx, h.account, chain, h.x); err != nil {
		t.Fatal(err)
	}
	if jobs, _ := h.db.Backfills(ctx, chain); len(jobs) != 0 {
		t.Fatalf("backfills of a deleted subscription: %+v", jobs)
	}
	if _, err := h.db.Subscribe(ctx, h.account, chain, h.x); err != nil {
		t.Fatal(err)
	}
	kill.left.Store(1)
	if err := h.fetcher(kill, h.fault, cfg).FetchOnce(ctx); !errors.Is(err, errCrash) {
		t.Fatalf("FetchOnce = %v, want the crash", err)
	}
	// A new process over the same database ends it.
	h.open() // as a restarted process
	if err := h.fetcher(h.db, h.fault, cfg).FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if sub := h.subscription(); sub.State != query.StateActive || sub.HistoryStart != 0 {
		t.Fatalf("resumed: %+v, want ACTIVE from 0", sub)
	}
	h.sameSet(h.listed(), h.want(0), 0)
	h.coherent(0) // no statement row lost or written twice
}

// limitedNode is a JSON-RPC proxy that refuses eth_getLogs over more than
// maxRange blocks, with the error message given, and counts them.
func limitedNode(t *testing.T, target string, maxRange uint64, code int, message string) (url string, refused, answered *atomic.Int64) {
	t.Helper()
	refused, answered = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params []struct {
				FromBlock string `json:"fromBlock"`
				ToBlock   string `json:"toBlock"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil && req.Method == "eth_getLogs" && len(req.Params) == 1 {
			from, _ := hexutil.DecodeUint64(req.Params[0].FromBlock)
			to, _ := hexutil.DecodeUint64(req.Params[0].ToBlock)
			if to-from+1 > maxRange {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":`+strconv.Itoa(code)+`,"message":"`+message+`"}}`)
				return
			}
			answered.Add(1)
		}
		forward(w, target, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, refused, answered
}

// TestBackfillLogLimits: a provider that refuses large eth_getLogs
// ranges, or answers "too many results", gets smaller ranges, and the
// history is the same.
func TestBackfillLogLimits(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, true, 300)
	for _, c := range []struct {
		name    string
		code    int
		message string
	}{
		{"RangeTooLarge", -32000, "block range too large"},
		{"TooManyResults", -32005, "query returned more than 10000 results"},
		{"ExceedMaxRange", -32602, "exceed maximum block range: 40"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, refused, answered := limitedNode(t, h.dev.URL, 40, c.code, c.message)
			src, err := evm.Dial(ctx, url, evm.SourceConfig{LogRange: 1000})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			// A fresh store per case.
			h.dsn = testenv.SQLite(t)
			h.open()
			key, _, err := h.db.CreateAPIKey(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			h.account = key.AccountID
			f := h.fetcher(h.db, src, fetch.Config{BackfillAll: true})
			if err := f.FetchOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := h.db.Subscribe(ctx, h.account, chain, h.x); err != nil {
				t.Fatal(err)
			}
			if err := f.FetchOnce(ctx); err != nil {
				t.Fatal(err)
			}
			h.sameSet(h.listed(), h.want(0), 0)
			if refused.Load() == 0 || answered.Load() == 0 {
				t.Fatalf("%d eth_getLogs refused, %d answered: the limit was not met", refused.Load(), answered.Load())
			}
			// Halving finds a width that passes, and keeps it: far fewer
			// refusals than answers.
			if refused.Load() > answered.Load() {
				t.Errorf("%d eth_getLogs refused for %d answered: the width does not settle", refused.Load(), answered.Load())
			}
		})
	}
}

// stalledStates is a Source whose historical state reads wait until
// released: a full-history backfill that takes long.
type stalledStates struct {
	*evm.Source
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *stalledStates) States(ctx context.Context, block uint64, addresses []string, nonces bool) ([]query.AccountState, error) {
	if len(addresses) == 1 && addresses[0] == "0x0000000000000000000000000000000000000000" {
		return s.Source.States(ctx, block, addresses, nonces) // the archive probe
	}
	if err := s.stall(ctx); err != nil {
		return nil, err
	}
	return s.Source.States(ctx, block, addresses, nonces)
}

func (s *stalledStates) StatesAt(ctx context.Context, reads []query.StateRead) ([][]query.AccountState, error) {
	if err := s.stall(ctx); err != nil {
		return nil, err
	}
	return s.Source.StatesAt(ctx, reads)
}

// stall waits until the test releases the reads.
func (s *stalledStates) stall(ctx context.Context) error {
	s.once.Do(func() { close(s.entered) })
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestBackfillBesideHead: while a backfill waits on the node, Run's head
// follower keeps storing new blocks; the backfill then ends.
func TestBackfillBesideHead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHistory(t, true, 100)
	src := &stalledStates{Source: h.src, entered: make(chan struct{}), release: make(chan struct{})}
	f := h.fetcher(h.db, src, fetch.Config{BackfillAll: true, Interval: 5 * time.Millisecond})
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Subscribe(ctx, h.account, chain, h.x); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	<-src.entered // the backfill has started, and waits
	for range 5 {
		h.dev.Commit()
	}
	head, _ := h.dev.Head()
	deadline := time.After(30 * time.Second)
	h.waitStored(head, deadline, "a backfill")
	if sub := h.subscription(); sub.State != query.StateSyncing {
		t.Fatalf("%+v, want SYNCING while the backfill waits", sub)
	}
	close(src.release)
	for h.subscription().State != query.StateActive {
		select {
		case <-deadline:
			t.Fatal("the backfill did not end")
		case <-time.After(5 * time.Millisecond):
		}
	}
	h.sameSet(h.listed(), h.want(0), 0)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
