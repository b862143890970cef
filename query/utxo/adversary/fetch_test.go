package adversary_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/utxo"
	"github.com/wharfhq/wharf/query/utxo/adversary"
)

// TestFetcherAdversarial runs the chain-neutral fetcher on the
// generator's random regtest activity, on btcd and litecoind, the
// wallet's addresses subscribed before the first block and its last key
// subscribed late, halfway: its past is the backfill's, from btcd's
// address index, or on litecoind from a scan of the blocks from a birth
// height at or below its first payment. After every block or reorg it
// fetches to the node's tip and holds every subscribed address's stored
// balance and statement to the node alone (its unspent outputs at the
// tip) and to the checker's own reading of the blocks: the balance
// equals them, the newest row is checked and reconciled (a late
// subscriber's may be its backfill's, not compared at its block), no row
// of the statement shows a difference, its rows chaining from zero to the
// balance, each row's amount is what the address's outputs moved in its
// block and every block that moved them has its row; every subscription
// is ACTIVE once the fetcher has caught up, covering the whole chain
// (the late one on litecoind, from its birth height). A failure names
// its seed (ADDRD_UTXO_SEED=N reruns it).
func TestFetcherAdversarial(t *testing.T) {
	steps := env(t, "ADDRD_UTXO_STEPS", 12)
	for _, dialect := range []string{adversary.Btcd, adversary.Core} {
		t.Run(dialect, func(t *testing.T) {
			for _, seed := range seeds(t, 1) {
				fetchPlay(t, dialect, seed, steps)
				if t.Failed() {
					return
				}
			}
		})
	}
}

func fetchPlay(t *testing.T, dialect string, seed uint64, steps int) {
	t.Helper()
	ctx := context.Background()
	fail := func(step int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (ADDRD_UTXO_SEED=%d reruns it) step %d on %s: %s", seed, seed, step, dialect, fmt.Sprintf(format, args...))
	}
	chain := "BTCREGTEST"
	if dialect == adversary.Core {
		chain = "LTCREGTEST"
	}
	net, keys, _, node, reader := regtest(t, dialect, seed)
	truth, err := utxo.Dial(ctx, node.URL) // the node's answers, apart from the fetcher's reader
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(truth.Close)

	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "addrd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	k, secret, err := db.CreateAPIKey(ctx, "adversary")
	if err != nil {
		t.Fatal(err)
	}
	acct, err := db.Authenticate(ctx, k.ID, secret)
	if err != nil {
		t.Fatal(err)
	}
	var tracked []string
	for _, k := range keys[:len(keys)-1] {
		tracked = append(tracked, k.Address.String)
		if _, err := db.Subscribe(ctx, acct.ID, chain, k.Address.String); err != nil {
			t.Fatal(err)
		}
	}
	// The node's balances cost a scan: the fetcher checks them at most
	// once a refresh interval, which the clock passes before each step.
	const refresh = 10 * time.Minute
	clk := testenv.NewClock(time.Now())
	// The last key, paid from the start, is subscribed halfway.
	late, lateStep := keys[len(keys)-1].Address.String, steps/2
	var lateStart uint64 // its birth height, on Core
	pick := rand.New(rand.NewPCG(seed, 43))
	f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: reader, Native: query.NativeCoin{Symbol: net.Coin, Decimals: utxo.Decimals},
		Logger: slog.New(slog.DiscardHandler), Clock: clk, RefreshInterval: refresh})
	if err != nil {
		t.Fatal(err)
	}
	// The generator takes its coins from a checker's view of the node,
	// which reads the chain with a reader of its own.
	own, err := utxo.Dial(ctx, node.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(own.Close)
	checker := adversary.NewChecker(own, node, append(slices.Clone(tracked), late))
	g := adversary.NewGenerator(node, dialect, keys, rand.New(rand.NewPCG(seed, 41)), checker)
	// The fetcher starts at the genesis, so that the statements cover
	// every block.
	if err := f.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Mine(ctx, utxo.CoinbaseMaturity+1); err != nil {
		t.Fatal(err)
	}
	for step := range steps {
		if err := g.Step(ctx); err != nil {
			fail(step, "%v\n%s", err, tail(g.Log))
		}
		if _, err := checker.Check(ctx, dialect, g.Replaced); err != nil {
			fail(step, "the checker: %v", err)
		}
		if step == lateStep {
			// On btcd the late key's past comes from the address index;
			// on Core, which keeps none, from a scan of the blocks from
			// a birth height its subscriber gives: at or a few blocks
			// below its first payment.
			if dialect == adversary.Core {
				first, err := truth.Head(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for b := range checker.Moved(late) {
					first = min(first, b)
				}
				lateStart = first - min(first, uint64(pick.IntN(4)))
				_, err = db.SubscribeFrom(ctx, acct.ID, chain, late, lateStart)
				if err != nil {
					t.Fatal(err)
				}
			} else if _, err := db.Subscribe(ctx, acct.ID, chain, late); err != nil {
				t.Fatal(err)
			}
			tracked = append(tracked, late)
		}
		tip, err := truth.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(refresh)
		caught := false
		for range 100 {
			if err := f.FetchOnce(ctx); err != nil {
				fail(step, "FetchOnce: %v\n%s", err, tail(g.Log))
			}
			if cp, _, _ := db.Checkpoint(ctx, chain); cp.Number >= tip && allActive(ctx, t, db, acct.ID, chain, tracked) {
				caught = true
				break
			}
		}
		if !caught {
			fail(step, "the fetcher did not reach the tip %d with every subscription ACTIVE in 100 steps", tip)
		}
		qs := make([]query.BalanceQuery, len(tracked))
		for i, a := range tracked {
			qs[i] = query.BalanceQuery{Address: a}
		}
		want, err := truth.Balances(ctx, tip, qs)
		if err != nil {
			fail(step, "the node's balances: %v", err)
		}
		var bad []string
		for i, a := range tracked {
			rows, err := db.AccountBalanceChanges(ctx, acct.ID, chain, a, nil, 10_000)
			if err != nil {
				t.Fatal(err)
			}
			got := query.Amount{}
			if len(rows) > 0 {
				got = rows[0].BalanceAfter
			}
			if got.Cmp(want[i].Amount) != 0 {
				bad = append(bad, fmt.Sprintf("%s: statement %s, node %s", a, got, want[i].Amount))
			}
			sum := query.Amount{}
			for j := len(rows) - 1; j >= 0; j-- {
				r := rows[j]
				sum = sum.Add(r.Amount)
				if !r.Difference.IsZero() || (r.Checked && !r.Reconciled) || sum.Cmp(r.BalanceAfter) != 0 {
					bad = append(bad, fmt.Sprintf("%s: row of block %d: amount %s, after %s (running %s), checked %v reconciled %v, difference %s",
						a, r.Block, r.Amount, r.BalanceAfter, sum, r.Checked, r.Reconciled, r.Difference))
				}
			}
			// The late subscriber's row of the block it was synced at is
			// the backfill's, not compared there (its balance is, above).
			if len(rows) > 0 && rows[0].Block == tip && !(rows[0].Checked && rows[0].Reconciled) && !(a == late && !rows[0].Checked) {
				bad = append(bad, fmt.Sprintf("%s: the row of the tip %d is not checked and reconciled", a, tip))
			}
			moved := checker.Moved(a)
			for _, r := range rows {
				if m, ok := moved[r.Block]; !ok || m.Cmp(r.Amount) != 0 {
					bad = append(bad, fmt.Sprintf("%s: the row of block %d moves %s, its outputs moved %s there", a, r.Block, r.Amount, m))
				}
				delete(moved, r.Block)
			}
			for _, b := range slices.Sorted(maps.Keys(moved)) {
				bad = append(bad, fmt.Sprintf("%s: block %d moved %s of its outputs, no row says so", a, b, moved[b]))
			}
			sub, err := db.Subscription(ctx, acct.ID, chain, a)
			if err != nil {
				t.Fatal(err)
			}
			if start := map[bool]uint64{true: lateStart}[a == late]; !sub.Covered || sub.HistoryStart != start {
				bad = append(bad, fmt.Sprintf("%s: the subscription covers from block %d (covered %v), not from %d", a, sub.HistoryStart, sub.Covered, start))
			}
		}
		if len(bad) > 0 {
			fail(step, "%d violations:\n  %s\nthe generator's last steps:\n%s", len(bad), strings.Join(bad, "\n  "), tail(g.Log))
		}
	}
	t.Logf("seed %d on %s: %d steps, %s, 0 violations", seed, dialect, steps, fmt.Sprint(g.Stats))
}

// allActive reports whether every subscription of addresses is ACTIVE.
func allActive(ctx context.Context, t *testing.T, db *store.DB, account int64, chain string, addresses []string) bool {
	t.Helper()
	for _, a := range addresses {
		sub, err := db.Subscription(ctx, account, chain, a)
		if err != nil {
			t.Fatal(err)
		}
		if sub.State != query.StateActive {
			return false
		}
	}
	return true
}
