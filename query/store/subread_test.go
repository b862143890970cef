package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestSubscriptionReads: the reads that return the subscription with the
// data (SubscriptionBalances, SubscriptionTransactions,
// SubscriptionBalanceChanges) tell the same subscription as Subscription
// and the same data as the reads of the data alone, for random
// subscriptions in every state (not subscribed; SYNCING before the first
// sync; synced with a backfill pending; ACTIVE) with random balances,
// transactions and statement rows (half the time some without their
// documents), paged at random sizes. The seed is printed on failure.
func TestSubscriptionReads(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		rng := testenv.Rand(t, 26)
		alice := newKey(t, db, "alice")
		bob := newKey(t, db, "bob")
		var addrs []string
		for i := range 2 + rng.IntN(5) {
			addrs = append(addrs, fmt.Sprintf("0x%040x", 0xad0+i))
		}
		// Bob tracks every address from block 0, so that transactions
		// and statement rows of every address are stored, also below
		// alice's history start.
		for _, a := range addrs {
			if _, err := db.Subscribe(ctx, bob.AccountID, "ETH", a); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range addrs {
			switch rng.IntN(4) {
			case 0: // alice is not subscribed
			case 1: // subscribed, not synced yet
				db.Subscribe(ctx, alice.AccountID, "ETH", a)
			case 2: // synced at a random block, backfill pending
				db.Subscribe(ctx, alice.AccountID, "ETH", a)
				at := uint64(rng.IntN(30))
				if err := db.MarkSynced(ctx, "ETH", []string{a}, at, 0); err != nil {
					t.Fatal(err)
				}
			case 3: // active, covered from a random block on
				db.Subscribe(ctx, alice.AccountID, "ETH", a)
				at, low := uint64(rng.IntN(30)), uint64(rng.IntN(10))
				if err := db.MarkSynced(ctx, "ETH", []string{a}, at, low); err != nil {
					t.Fatal(err)
				}
				if low <= at {
					job := query.BackfillJob{Addresses: []string{a}, Low: low, Next: at}
					if err := db.StoreBackfill(ctx, "ETH", job, nil, nil, int64(low)-1); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		var (
			txs      []query.Transaction
			balances []query.Balance
			changes  []query.BalanceChange
		)
		for n := range 1 + rng.IntN(40) {
			from, to := addrs[rng.IntN(len(addrs))], addrs[rng.IntN(len(addrs))]
			txs = append(txs, tx(uint64(n/3), uint(n%3), from, to))
		}
		for _, a := range addrs {
			for k := range rng.IntN(4) {
				b := query.Balance{Chain: "ETH", Address: a, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18,
					Amount: query.AmountOf(int64(rng.IntN(1e9))), Block: uint64(rng.IntN(50)), Updated: time.Unix(1_700_000_000+int64(k), 0).UTC()}
				if k > 0 {
					b.Asset, b.Contract, b.Symbol, b.Decimals = query.AssetERC20, fmt.Sprintf("0x%040x", 0xc0+k), "T"+strconv.Itoa(k), 6
				}
				balances = append(balances, b)
			}
			for n := range rng.IntN(25) {
				c := query.BalanceChange{Chain: "ETH", Address: a, Block: uint64(n), Time: time.Unix(1_700_000_000+int64(n)*12, 0).UTC(),
					Amount: query.AmountOf(int64(rng.IntN(1000) - 500)), BalanceAfter: query.AmountOf(int64(rng.IntN(1e6))), Checked: true, Reconciled: rng.IntN(2) == 0,
					Causes: []query.Cause{{Kind: query.KindTransaction, TxHash: fmt.Sprintf("0x%064x", n), Amount: query.AmountOf(7)}}}
				if rng.IntN(3) == 0 {
					c.Contract = addrC
				}
				changes = append(changes, c)
			}
		}
		if err := db.PutTransactions(ctx, "ETH", txs); err != nil {
			t.Fatal(err)
		}
		if err := db.PutStatement(ctx, "ETH", changes, nil, balances); err != nil {
			t.Fatal(err)
		}
		// Half the time, rows of every other block as an older binary
		// wrote them, without documents: their pages are read by joins,
		// and must keep to the covered range too.
		if rng.IntN(2) == 0 {
			if err := db.ForgetTxDocuments(ctx); err != nil {
				t.Fatal(err)
			}
		}

		for _, a := range addrs {
			want, werr := db.Subscription(ctx, alice.AccountID, "ETH", a)
			sameSub := func(read string, got query.Subscription, err error) bool {
				t.Helper()
				if errors.Is(werr, query.ErrNotSubscribed) {
					if !errors.Is(err, query.ErrNotSubscribed) {
						t.Fatalf("%s of %s, not subscribed: %v, want ErrNotSubscribed", read, a, err)
					}
					return false
				}
				if err != nil || werr != nil {
					t.Fatalf("%s of %s: %v (Subscription: %v)", read, a, err, werr)
				}
				w := want
				w.Created = time.Time{} // the reads do not tell it
				if got != w {
					t.Fatalf("%s of %s: subscription %+v, Subscription says %+v", read, a, got, want)
				}
				return true
			}

			sub, bs, err := db.SubscriptionBalances(ctx, alice.AccountID, "ETH", a)
			if sameSub("SubscriptionBalances", sub, err) {
				all, err := db.Balances(ctx, "ETH", a)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(bs, all) {
					t.Fatalf("SubscriptionBalances of %s: %+v, Balances %+v", a, bs, all)
				}
			}

			// The transactions: those of the covered range, newest first,
			// whole (a page is parsed into one reused transaction: each
			// must still have its own transfers).
			var wantTxs []query.Transaction
			if want.Covered {
				all, err := db.Transactions(ctx, "ETH", a, nil, 1000)
				if err != nil {
					t.Fatal(err)
				}
				for _, t := range all {
					if t.BlockNumber >= want.HistoryStart {
						wantTxs = append(wantTxs, t)
					}
				}
			}
			size := 1 + rng.IntN(7)
			gotTxs := txPages(db, alice.AccountID, a, size, func(sub query.Subscription, err error) bool {
				return sameSub("SubscriptionTransactions", sub, err)
			})
			if !reflect.DeepEqual(gotTxs, wantTxs) {
				t.Fatalf("SubscriptionTransactions of %s (%+v), pages of %d:\n%+v\nwant %+v", a, want, size, gotTxs, wantTxs)
			}

			// The statement: every row, newest first.
			var wantRows, gotRows []string
			if werr == nil {
				for _, c := range changes {
					if c.Address == a {
						wantRows = append(wantRows, fmt.Sprintf("%d/%s/%s/%v", c.Block, c.Contract, c.BalanceAfter, c.Causes))
					}
				}
				slices.Reverse(wantRows) // one row a block, put in block order
			}
			var cafter *query.ChangeCursor
			for {
				sub, page, err := db.SubscriptionBalanceChanges(ctx, alice.AccountID, "ETH", a, cafter, size)
				if !sameSub("SubscriptionBalanceChanges", sub, err) {
					break
				}
				for _, c := range page {
					gotRows = append(gotRows, fmt.Sprintf("%d/%s/%s/%v", c.Block, c.Contract, c.BalanceAfter, c.Causes))
				}
				if len(page) < size {
					break
				}
				last := page[len(page)-1]
				cafter = &query.ChangeCursor{Block: last.Block, Contract: last.Contract}
			}
			if !slices.Equal(gotRows, wantRows) {
				t.Fatalf("SubscriptionBalanceChanges of %s, pages of %d: %v, want %v", a, size, gotRows, wantRows)
			}
		}
	})
}
