package fetch_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	qchain "github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/chain/chaintest"
	"github.com/wharfhq/wharf/query/fetch"
)

// costlyTip is a Reader whose balances, told at the head only, cost a
// scan (chain.CostlyBalances), as a UTXO node's: it records each reading.
type costlyTip struct {
	qchain.Reader
	mu    sync.Mutex
	reads []string // "block: addresses" of each reading
}

func (c *costlyTip) Balances(ctx context.Context, block uint64, qs []query.BalanceQuery) ([]query.Balance, error) {
	var addrs []string
	for _, q := range qs {
		addrs = append(addrs, q.Address)
	}
	c.mu.Lock()
	c.reads = append(c.reads, strings.Join(append([]string{itoa(block) + ":"}, addrs...), " "))
	c.mu.Unlock()
	return c.Reader.(qchain.BalanceReader).Balances(ctx, block, qs)
}

func (c *costlyTip) BalancesCostly() bool { return true }

// taken returns the readings since the last call.
func (c *costlyTip) taken() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reads
	c.reads = nil
	return r
}

func itoa(n uint64) string { return query.AmountOf(int64(n)).String() }

// TestFetchPacedCheck: on a Reader whose balances cost a scan, the head
// follower checks the statements at most once a refresh interval, by the
// clock: the first chunk is checked, the next ones within the interval
// read no balance and their rows say they were not checked; the first
// chunk after it reads every address touched since the last check (one
// the chunk did not touch too), and its rows are checked.
func TestFetchPacedCheck(t *testing.T) {
	const interval = time.Hour
	clk := testenv.NewClock(time.Now())
	e := newFakeEnv(t, testenv.SQLite(t), chaintest.FakeConfig{TipBalances: true}, fetch.Config{})
	reader := &costlyTip{Reader: e.fake.Reader()}
	f, err := fetch.New(fetch.Config{Chain: fakeChain, Store: e.db, Reader: reader, Clock: clk, RefreshInterval: interval,
		Native: query.NativeCoin{Symbol: "FAKE", Decimals: 8}})
	if err != nil {
		t.Fatal(err)
	}
	e.f = f
	e.fake.Mine(3)
	e.subscribe("bob", "carol", "dave")
	e.fetch()
	reader.taken()

	// The first check is due at once.
	e.fake.Pay(pay("alice", "bob", 1000, 10))
	e.fake.Mine(1) // 4
	e.fetch()
	if got, want := reader.taken(), []string{"4: bob"}; !slices.Equal(got, want) {
		t.Fatalf("the first chunk's readings %q, want %q", got, want)
	}
	// Within the interval: no reading, rows not checked.
	e.fake.Pay(pay("alice", "bob", 20, 1))
	e.fake.Mine(1) // 5
	e.fetch()
	clk.Advance(interval / 4)
	e.fake.Pay(pay("alice", "carol", 300, 1))
	e.fake.Mine(1) // 6
	e.fetch()
	if got := reader.taken(); len(got) != 0 {
		t.Fatalf("readings within the refresh interval %q, want none", got)
	}
	// Their balances follow the statements meanwhile, each told at the
	// block of the chunk that touched it.
	for _, want := range []query.Balance{{Address: "bob", Amount: query.AmountOf(1020), Block: 5}, {Address: "carol", Amount: query.AmountOf(300), Block: 6}} {
		bals, err := e.db.Balances(context.Background(), fakeChain, want.Address)
		if err != nil || len(bals) != 1 || bals[0].Amount != want.Amount || bals[0].Block != want.Block {
			t.Fatalf("%s's balances between checks %+v, %v; want %s at block %d", want.Address, bals, err, want.Amount, want.Block)
		}
	}
	// Past it: bob and carol, touched since the last check, are read at
	// block 7, which touches bob alone.
	clk.Advance(interval)
	e.fake.Pay(pay("alice", "bob", 5, 1))
	e.fake.Mine(1) // 7
	e.fetch()
	if got := reader.taken(); !slices.Contains(got, "7: bob carol") {
		t.Fatalf("readings past the refresh interval %q, want one of bob and carol at block 7", got)
	}
	e.fake.Pay(pay("alice", "bob", 7, 1))
	e.fake.Mine(1) // 8
	e.fetch()
	e.wantRows("bob", fakeRow{block: 4, amount: 1000, after: 1000, causes: 1, checked: true, reconciled: true},
		fakeRow{block: 5, amount: 20, after: 1020, causes: 1},
		fakeRow{block: 7, amount: 5, after: 1025, causes: 1, checked: true, reconciled: true},
		fakeRow{block: 8, amount: 7, after: 1032, causes: 1})
	e.wantRows("carol", fakeRow{block: 6, amount: 300, after: 300, causes: 1})
}
