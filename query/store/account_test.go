package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestAccountReads checks that the requester's reads answer the data of
// subscribed addresses only, telling "not subscribed" from "nothing
// stored" in each case.
func TestAccountReads(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		alice := newKey(t, db, "alice")
		bob := newKey(t, db, "bob")
		for _, s := range []struct {
			account int64
			addr    string
		}{{alice.AccountID, addrA}, {alice.AccountID, addrC}, {bob.AccountID, addrB}} {
			if _, err := db.Subscribe(ctx, s.account, "ETH", s.addr); err != nil {
				t.Fatal(err)
			}
		}
		covered(t, db, addrA, addrB, addrC)
		txs := []query.Transaction{tx(1, 0, addrA, addrB), tx(2, 0, addrB, addrA), tx(3, 1, addrA, addrB)}
		bals := []query.Balance{{Chain: "ETH", Address: addrA, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Amount: query.AmountOf(5), Block: 3, Updated: clk.Now()}}
		if err := db.StoreBlock(ctx, "ETH", block(3), txs, bals); err != nil {
			t.Fatal(err)
		}
		after := &query.TxCursor{BlockNumber: 3, Index: 1}
		for _, c := range []struct {
			name    string
			account int64
			addr    string
			after   *query.TxCursor
			bals    int
			txs     int
			err     error
		}{
			{"subscribed", alice.AccountID, addrA, nil, 1, 3, nil},
			{"subscribed, second page", alice.AccountID, addrA, after, 1, 2, nil},
			{"subscribed, nothing stored", alice.AccountID, addrC, nil, 0, 0, nil},
			{"subscribed, no balances", bob.AccountID, addrB, nil, 0, 3, nil},
			{"another requester's address", bob.AccountID, addrA, nil, 0, 0, query.ErrNotSubscribed},
			{"another requester's, second page", bob.AccountID, addrA, after, 0, 0, query.ErrNotSubscribed},
			{"no account", 0, addrA, nil, 0, 0, query.ErrNotSubscribed},
		} {
			t.Run(c.name, func(t *testing.T) {
				bs, err := db.AccountBalances(ctx, c.account, "ETH", c.addr)
				if !errors.Is(err, c.err) || (c.err != nil) != (err != nil) || len(bs) != c.bals {
					t.Errorf("AccountBalances = %d, %v; want %d, %v", len(bs), err, c.bals, c.err)
				}
				ts, err := db.AccountTransactions(ctx, c.account, "ETH", c.addr, c.after, 50)
				if !errors.Is(err, c.err) || (c.err != nil) != (err != nil) || len(ts) != c.txs {
					t.Errorf("AccountTransactions = %d, %v; want %d, %v", len(ts), err, c.txs, c.err)
				}
			})
		}
		// Unsubscribed: the data stays, unreadable; back again, readable.
		if err := db.Unsubscribe(ctx, alice.AccountID, "ETH", addrA); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AccountTransactions(ctx, alice.AccountID, "ETH", addrA, nil, 50); !errors.Is(err, query.ErrNotSubscribed) {
			t.Errorf("after unsubscribing: %v, want ErrNotSubscribed", err)
		}
		if _, err := db.Subscribe(ctx, alice.AccountID, "ETH", addrA); err != nil {
			t.Fatal(err)
		}
		if ts, err := db.AccountTransactions(ctx, alice.AccountID, "ETH", addrA, nil, 50); err != nil || len(ts) != 3 {
			t.Errorf("subscribed again: %d, %v; want 3", len(ts), err)
		}
	})
}
