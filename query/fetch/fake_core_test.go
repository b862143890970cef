package fetch_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/chain/chaintest"
	"github.com/wharfhq/wharf/query/fetch"
)

// The fetcher's core on the fake family's account chain (a Reader with
// balances at every block and a history source): what the core does
// whatever the family, with no node.

// refetch replaces the fetcher with one of cfg over st (a store that
// stands in for the database's lease, say), of the same chain.
func (e *fakeEnv) refetch(st fetch.Store, cfg fetch.Config) {
	e.t.Helper()
	cfg.Chain, cfg.Store, cfg.Reader = fakeChain, st, e.fake.Reader()
	cfg.Native = query.NativeCoin{Symbol: "FAKE", Decimals: 8}
	f, err := fetch.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.f = f
}

// start runs the fetcher beside the test until stop.
func (e *fakeEnv) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.f.Run(ctx) }()
	return func() { cancel(); <-done }
}

// waitStored waits until the fetcher running beside the test has stored
// block number, failing the test after 30 s.
func (e *fakeEnv) waitStored(number uint64, what string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cp, found, err := e.db.Checkpoint(context.Background(), fakeChain)
		if err != nil {
			e.t.Fatal(err)
		}
		if found && cp.Number >= number {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: block %d not stored in 30 s (checkpoint %d)", what, number, cp.Number)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeToken is the holding key of the fake chain's token.
var fakeToken = query.HoldingKey(query.AssetERC20, "tok", "")

// holdingRows returns address's statement of holding ("" the native
// coin), oldest first.
func (e *fakeEnv) holdingRows(address, holding string) []fakeRow {
	e.t.Helper()
	return fakeRows(e.changes(address), func(c query.BalanceChange) bool { return c.Contract == holding })
}

// wantChained fails unless each of address's statements of holdings
// chains: its first row opens at the node's balance before its block, a
// row's balance after, less its amount, is the one before's, and the
// last ends at the node's balance at the checkpoint.
func (e *fakeEnv) wantChained(address string, holdings ...string) {
	e.t.Helper()
	cp, _, err := e.db.Checkpoint(context.Background(), fakeChain)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range holdings {
		rows := e.holdingRows(address, h)
		if len(rows) == 0 {
			continue
		}
		var balance int64 // nothing before the genesis
		if rows[0].block > 0 {
			balance = e.fake.Balance(address, h, rows[0].block-1).Big().Int64()
		}
		for _, r := range rows {
			if r.after-r.amount != balance {
				e.t.Errorf("%s %q: the row at block %d opens at %d, the balance before it is %d", address, h, r.block, r.after-r.amount, balance)
			}
			balance = r.after
		}
		if node := e.fake.Balance(address, h, cp.Number).Big().Int64(); node != balance {
			e.t.Errorf("%s %q: the statement ends at %d, the node says %d at the checkpoint %d", address, h, balance, node, cp.Number)
		}
	}
}

// replayHoldings replays alice's event feed over every holding: a
// balance_change adds its row, a retraction removes the one the feed
// holds (the same amounts), and it fails unless what remains is exactly
// the statements of addresses. It returns the retractions.
func (e *fakeEnv) replayHoldings(addresses ...string) int {
	e.t.Helper()
	ctx := context.Background()
	type key struct {
		address, holding string
		block            uint64
	}
	type row struct{ amount, after string }
	live := map[key]row{}
	retractions := 0
	for after := int64(-1); ; {
		p, err := e.db.AccountEvents(ctx, e.account, after, query.EventFilter{}, 1000)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ev := range p.Events {
			var c struct {
				Address      string
				Contract     string
				TokenID      string `json:"token_id"`
				BlockNumber  uint64 `json:"block_number"`
				Amount       string
				BalanceAfter string `json:"balance_after"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
				e.t.Fatal(err)
			}
			holding := ""
			if c.Contract != "" {
				holding = query.HoldingKey(query.AssetERC20, c.Contract, c.TokenID)
			}
			k, r := key{c.Address, holding, c.BlockNumber}, row{c.Amount, c.BalanceAfter}
			switch ev.Kind {
			case query.EventBalanceChange:
				if _, ok := live[k]; ok {
					e.t.Fatalf("event %d adds %v twice", ev.ID, k)
				}
				live[k] = r
			case query.EventRetracted:
				if live[k] != r {
					e.t.Fatalf("event %d retracts %v %v; the feed holds %v", ev.ID, k, r, live[k])
				}
				delete(live, k)
				retractions++
			}
		}
		if len(p.Events) == 0 && p.Through == after {
			break
		}
		after = p.Through
	}
	n := 0
	for _, a := range addresses {
		changes, err := e.db.AccountBalanceChanges(ctx, e.account, fakeChain, a, nil, 1000)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, c := range changes {
			if got, ok := live[key{a, c.Contract, c.Block}]; !ok || got != (row{c.Amount.String(), c.BalanceAfter.String()}) {
				e.t.Fatalf("%s's row of %q at block %d (%s → %s): the feed holds %v (%v)", a, c.Contract, c.Block, c.Amount, c.BalanceAfter, got, ok)
			}
			n++
		}
	}
	if n != len(live) {
		e.t.Fatalf("the feed holds %d rows, the statements %d", len(live), n)
	}
	return retractions
}

// TestFakeStatementChecked: on an account chain the statement's rows
// carry running balances per holding (the native coin and a token),
// each checked against the node's balance at its block (the last of a
// step) and reconciled; a change no movement lists is located, below
// the block where a check finds it, at the block where the node's
// balance first differs, as a row of its own that says so.
func TestFakeStatementChecked(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		e := newFakeEnv(t, dsn, chaintest.FakeConfig{Balances: true, Alloc: map[string]query.Amount{"alice": query.AmountOf(10_000)}}, fetch.Config{})
		e.fake.Mine(2)
		e.subscribe("alice", "bob")
		e.fetch()

		e.fake.Pay(pay("alice", "bob", 1000, 10))
		e.fake.Pay(chaintest.Payment{From: "mint", To: "bob", Holding: fakeToken, Amount: query.AmountOf(70), Fee: query.AmountOf(1)})
		e.fake.Mine(1) // 3
		e.fetch()      // a step's blocks are checked at its last: one each
		e.fake.Pay(pay("bob", "alice", 200, 5))
		e.fake.Pay(chaintest.Payment{From: "bob", To: "carol", Holding: fakeToken, Amount: query.AmountOf(30), Fee: query.AmountOf(2)})
		e.fake.Mine(1) // 4
		e.fetch()
		e.fake.Mine(1) // 5
		e.fetch()
		// The backfill writes her genesis allocation's row.
		e.wantRows("alice", fakeRow{block: 0, amount: 10000, after: 10000, causes: 1, checked: true, reconciled: true},
			fakeRow{block: 3, amount: -1010, after: 8990, causes: 2, checked: true, reconciled: true},
			fakeRow{block: 4, amount: 200, after: 9190, causes: 1, checked: true, reconciled: true})
		if got, want := e.holdingRows("bob", ""), []fakeRow{{block: 3, amount: 1000, after: 1000, causes: 1, checked: true, reconciled: true},
			{block: 4, amount: -207, after: 793, causes: 3, checked: true, reconciled: true}}; !slices.Equal(got, want) {
			t.Fatalf("bob's native statement:\n%s\nwant\n%s", rowsText(got), rowsText(want))
		}
		if got, want := e.holdingRows("bob", fakeToken), []fakeRow{{block: 3, amount: 70, after: 70, causes: 1, checked: true, reconciled: true},
			{block: 4, amount: -30, after: 40, causes: 1, checked: true, reconciled: true}}; !slices.Equal(got, want) {
			t.Fatalf("bob's token statement:\n%s\nwant\n%s", rowsText(got), rowsText(want))
		}
		e.wantChained("bob", "", fakeToken)

		// 7 units the family does not list, from block 6 on; bob moves
		// again at 8. The check at 8 finds the node's balance 7 above the
		// movements', and the fetcher locates where it first differed.
		e.fake.Unseen("bob", "", query.AmountOf(7))
		e.fake.Mine(2) // 6, 7
		e.fake.Pay(pay("alice", "bob", 50, 1))
		e.fake.Mine(1) // 8
		e.fetch()
		got := e.holdingRows("bob", "")
		if len(got) < 3 {
			t.Fatalf("bob's native statement after an unlisted change:\n%s", rowsText(got))
		}
		var differs []fakeRow
		for _, r := range got {
			if r.difference != 0 {
				differs = append(differs, r)
			}
		}
		if len(differs) != 1 || differs[0].difference != 7 || differs[0].block != 6 || !differs[0].checked {
			t.Errorf("bob's statement after 7 unlisted units from block 6:\n%swant one checked row with difference 7, at block 6", rowsText(got))
		}
		if last := got[len(got)-1]; last.block != 8 || last.after != 850 || !last.checked || !last.reconciled {
			t.Errorf("bob's row at 8: %v, want 793+7+50 = 850, checked and reconciled", last)
		}
		e.wantChained("bob", "", fakeToken)
		if n := e.replayHoldings("alice", "bob"); n != 0 {
			t.Fatalf("%d retractions without a reorg", n)
		}
	})
}

// TestFakeReorgRetracts: a reorg deeper than one block, across two
// holdings and several fetches, retracts exactly the rows of the blocks
// replaced (each retraction the row the feed held), stores the new
// branch's, and leaves every statement chained and equal to the node's
// balances, for seeded payments.
func TestFakeReorgRetracts(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		rng := rand.New(rand.NewPCG(uint64(seed), 0))
		people := []string{"alice", "bob", "carol", "dave"}
		alloc := map[string]query.Amount{}
		for _, p := range people {
			alloc[p] = query.AmountOf(1_000_000)
		}
		e := newFakeEnv(t, dsn, chaintest.FakeConfig{Balances: true, Alloc: alloc}, fetch.Config{})
		e.fake.Mine(1)
		e.subscribe(people[:3]...) // dave is not tracked
		e.fetch()
		retracted := 0
		for round := range 6 {
			for range 1 + rng.IntN(3) {
				from, to := people[rng.IntN(len(people))], people[rng.IntN(len(people))]
				p := pay(from, to, 1+rng.Int64N(1000), rng.Int64N(20))
				if rng.IntN(3) == 0 {
					p.From, p.Holding = "mint", fakeToken // a token minted to someone
				}
				e.fake.Pay(p)
				e.fake.Mine(1 + rng.IntN(2))
			}
			e.fetch()
			if round%2 == 1 {
				depth := 1 + rng.IntN(3)
				e.fake.Reorg(depth)
				e.fetch() // the rewind
				e.fetch() // the new branch
			}
			for _, p := range people[:3] {
				e.wantChained(p, "", fakeToken)
			}
			retracted = e.replayHoldings(people[:3]...)
		}
		if retracted == 0 {
			t.Log("no row retracted by the reorgs of this seed")
		}
	})
}

// TestFakeNodeDown: with the node unreachable a step fails with
// query.ErrUnavailable, Health says so, addrd_fetch_node_errors_total
// counts it and the store keeps serving; once it is back, the blocks
// mined meanwhile are stored and Health is clear. (How the EVM family
// reports a node that is down is query/evm's TestReaderNodeDown and
// TestReaderNodeDies.)
func TestFakeNodeDown(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newFakeEnv(t, testenv.SQLite(t), chaintest.FakeConfig{Balances: true, Alloc: map[string]query.Amount{"alice": query.AmountOf(500)}}, fetch.Config{Metrics: reg})
	ctx := context.Background()
	e.fake.Mine(1)
	e.subscribe("alice")
	e.fetch()
	if err := e.f.Health(); err != nil {
		t.Fatalf("Health() = %v, want nil", err)
	}
	if got := testutil.ToFloat64(metric(t, reg, "addrd_fetch_node_errors_total")); got != 0 {
		t.Fatalf("node_errors_total = %v with the node up, want 0", got)
	}
	e.fake.SetDown(true)
	hash := e.fake.Pay(pay("alice", "bob", 100, 1))
	e.fake.Mine(1)
	if err := e.f.FetchOnce(ctx); !errors.Is(err, query.ErrUnavailable) {
		t.Fatalf("FetchOnce with the node down = %v, want ErrUnavailable", err)
	}
	if err := e.f.Health(); !errors.Is(err, query.ErrUnavailable) {
		t.Errorf("Health() with the node down = %v, want ErrUnavailable", err)
	}
	if got := testutil.ToFloat64(metric(t, reg, "addrd_fetch_node_errors_total")); got < 1 {
		t.Errorf("node_errors_total = %v after a step with the node down, want ≥ 1", got)
	}
	if bs, err := e.db.Balances(ctx, fakeChain, "alice"); err != nil || len(bs) != 1 || bs[0].Amount != query.AmountOf(500) {
		t.Errorf("alice's balances with the node down: %v, %v; want 500", bs, err)
	}
	e.fake.SetDown(false)
	e.fetch()
	if err := e.f.Health(); err != nil {
		t.Errorf("Health() once the node is back = %v", err)
	}
	if got := txHashes(t, e.db, "alice"); !slices.Contains(got, hash) {
		t.Errorf("alice's transactions %v: the payment %s mined while the node was down is missing", got, hash)
	}
	e.wantRows("alice", fakeRow{block: 0, amount: 500, after: 500, causes: 1, checked: true, reconciled: true}, // her genesis allocation, backfilled
		fakeRow{block: 2, amount: -101, after: 399, causes: 2, checked: true, reconciled: true})
}

// TestFakeLease: two replicas run the fetcher of one chain on one store:
// one leads and stores the blocks; when it stops, the other takes the
// lease (a new generation) and stores the blocks mined after.
func TestFakeLease(t *testing.T) {
	e := newFakeEnv(t, testenv.SQLite(t), chaintest.FakeConfig{Balances: true}, fetch.Config{Holder: "a", LeaseTTL: 2 * time.Second, Interval: 20 * time.Millisecond})
	ctx := context.Background()
	second, err := fetch.New(fetch.Config{Chain: fakeChain, Store: e.db, Reader: e.fake.Reader(), Holder: "b", LeaseTTL: 2 * time.Second,
		Interval: 20 * time.Millisecond, Native: query.NativeCoin{Symbol: "FAKE", Decimals: 8}})
	if err != nil {
		t.Fatal(err)
	}
	e.subscribe("alice")
	e.fake.Mine(3)
	run := func(f *fetch.Fetcher) (stop func()) {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.Run(ctx) }()
		return func() { cancel(); <-done }
	}
	stopA := run(e.f)
	e.waitStored(3, "the first replica")
	stopB := run(second)
	defer stopB()
	first, err := e.db.ChainLease(ctx, fakeChain)
	if err != nil || first.Holder != "a" {
		t.Fatalf("lease %+v, %v while a runs; want a's", first, err)
	}
	e.fake.Pay(pay("bob", "alice", 5, 1))
	e.fake.Mine(1) // 4
	e.waitStored(4, "the leader")
	if l, err := e.db.ChainLease(ctx, fakeChain); err != nil || l.Holder != "a" || l.Generation != first.Generation {
		t.Fatalf("lease %+v, %v with both running; want a's of generation %d", l, err, first.Generation)
	}
	stopA()
	e.fake.Pay(pay("bob", "alice", 6, 1))
	e.fake.Mine(1) // 5
	e.waitStored(5, "the replica that took over")
	l, err := e.db.ChainLease(ctx, fakeChain)
	if err != nil || l.Holder != "b" || l.Generation <= first.Generation {
		t.Fatalf("lease %+v, %v after a stopped; want b's, of a generation above %d", l, err, first.Generation)
	}
	e.wantRows("alice", fakeRow{block: 4, amount: 5, after: 5, causes: 1, checked: true, reconciled: true},
		fakeRow{block: 5, amount: 6, after: 11, causes: 1, checked: true, reconciled: true})
	if n := e.replayHoldings("alice"); n != 0 {
		t.Fatalf("%d retractions without a reorg", n)
	}
}
