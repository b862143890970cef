package utxo_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/utxo"
)

// TestSubscribeBehind: an address paid by every block (the miner's)
// subscribed while the fetcher is 80 blocks below the node's tip, which
// tells balances there only, gets its whole statement: a row for each
// block that paid it, chaining from zero, none with a difference, to the
// node's unspent outputs at the tip, checked there; its subscription
// waits, SYNCING, until the fetcher is near enough the tip to carry the
// tip's balance back, and is ACTIVE from the genesis once caught up.
func TestSubscribeBehind(t *testing.T) {
	for _, dialect := range []string{testenv.DialectBtcd, testenv.DialectCore} {
		t.Run(dialect, func(t *testing.T) { testSubscribeBehind(t, dialect) })
	}
}

func testSubscribeBehind(t *testing.T, dialect string) {
	ctx := context.Background()
	c := newRegtestChain(t, dialect)
	name := map[string]string{testenv.DialectBtcd: "BTCREGTEST", testenv.DialectCore: "LTCREGTEST"}[dialect]
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "addrd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	k, secret, err := db.CreateAPIKey(ctx, "behind")
	if err != nil {
		t.Fatal(err)
	}
	acct, err := db.Authenticate(ctx, k.ID, secret)
	if err != nil {
		t.Fatal(err)
	}
	// One block a step: the fetcher stays behind while it catches up.
	f, err := fetch.New(fetch.Config{Chain: name, Store: db, Reader: c.reader, Native: query.NativeCoin{Symbol: c.net.Coin, Decimals: utxo.Decimals},
		Batch: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	catchUp := func(what string, done func(cp uint64, sub query.Subscription) bool) query.Subscription {
		t.Helper()
		for range 1000 {
			if err := f.FetchOnce(ctx); err != nil {
				t.Fatal(err)
			}
			cp, _, err := db.Checkpoint(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			sub, err := db.Subscription(ctx, acct.ID, name, c.payer.String)
			if err != nil && !errors.Is(err, query.ErrNotSubscribed) {
				t.Fatal(err)
			}
			if done(cp.Number, sub) {
				return sub
			}
		}
		t.Fatalf("%s: not in 1000 steps", what)
		return query.Subscription{}
	}
	tip, err := c.reader.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	catchUp("the fetcher at the tip", func(cp uint64, _ query.Subscription) bool { return cp >= tip })
	c.node.Generate(t, 80, c.payer.String)
	if tip, err = c.reader.Head(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Subscribe(ctx, acct.ID, name, c.payer.String); err != nil {
		t.Fatal(err)
	}
	var syncedAt uint64
	catchUp("the subscription synced", func(cp uint64, sub query.Subscription) bool {
		if sub.Covered && syncedAt == 0 {
			syncedAt = cp
		}
		return sub.Covered
	})
	if syncedAt+64 < tip {
		t.Errorf("synced with the fetcher at block %d, %d below the tip %d", syncedAt, tip-syncedAt, tip)
	}
	sub := catchUp("the subscription ACTIVE at the tip", func(cp uint64, sub query.Subscription) bool {
		return cp >= tip && sub.State == query.StateActive
	})
	if sub.HistoryStart != 0 {
		t.Errorf("history from block %d, want the genesis", sub.HistoryStart)
	}
	bals, err := c.reader.Balances(ctx, tip, []query.BalanceQuery{{Address: c.payer.String}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.AccountBalanceChanges(ctx, acct.ID, name, c.payer.String, nil, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	if uint64(len(rows)) != tip {
		bad = append(bad, fmt.Sprintf("%d rows, want one for each of the blocks 1 to %d", len(rows), tip))
	}
	sum := query.Amount{}
	for i := len(rows) - 1; i >= 0; i-- {
		r := rows[i]
		sum = sum.Add(r.Amount)
		if r.Block != uint64(len(rows)-i) || r.Amount.Sign() <= 0 || !r.Difference.IsZero() || sum.Cmp(r.BalanceAfter) != 0 {
			bad = append(bad, fmt.Sprintf("row of block %d: amount %s, after %s (running %s), difference %s", r.Block, r.Amount, r.BalanceAfter, sum, r.Difference))
		}
	}
	if len(rows) > 0 && (rows[0].BalanceAfter.Cmp(bals[0].Amount) != 0 || !rows[0].Checked || !rows[0].Reconciled) {
		bad = append(bad, fmt.Sprintf("the newest row: after %s, checked %v, reconciled %v; the node's unspent outputs %s", rows[0].BalanceAfter, rows[0].Checked, rows[0].Reconciled, bals[0].Amount))
	}
	if len(bad) > 10 {
		bad = append(bad[:10], fmt.Sprintf("… %d more", len(bad)-10))
	}
	for _, b := range bad {
		t.Error(b)
	}
}
