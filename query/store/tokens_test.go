package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestTokensOnce: a token's symbol, name and decimals are stored once,
// in tokens, and every read of its transfers (by hash, an address's
// page, a requester's page, a range) answers them as they were stored;
// a token whose metadata changes has a row for each answer, and each
// transfer reads as the token said when it was stored.
func TestTokensOnce(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		alice := newKey(t, db, "alice")
		if _, err := db.Subscribe(ctx, alice.AccountID, "ETH", addrA); err != nil {
			t.Fatal(err)
		}
		if err := db.MarkSynced(ctx, "ETH", []string{addrA}, 0, 0); err != nil {
			t.Fatal(err)
		}
		token := fmt.Sprintf("0x%040x", 0x70c)
		mint := func(n uint64, symbol, name string, decimals int) query.Transaction {
			t := tx(n, 0, addrB, token)
			t.Transfers = append(t.Transfers, query.Transfer{Position: 0, Asset: query.AssetERC20, Contract: token,
				From: addrC, To: addrA, Amount: query.AmountOf(int64(n)), Kind: query.KindToken, Symbol: symbol, Name: name, Decimals: decimals})
			return t
		}
		reads := func(t *testing.T, want []query.Transaction) {
			t.Helper()
			for _, w := range want {
				if got, err := db.Transaction(ctx, "ETH", w.Hash); err != nil || fmt.Sprintf("%+v", got.Transfers) != fmt.Sprintf("%+v", w.Transfers) {
					t.Errorf("Transaction(%s).Transfers = %+v, %v; want %+v", w.Hash, got.Transfers, err, w.Transfers)
				}
			}
			page, err := db.Transactions(ctx, "ETH", addrA, nil, 10)
			if err != nil {
				t.Fatal(err)
			}
			_, mine, err := db.SubscriptionTransactions(ctx, alice.AccountID, "ETH", addrA, nil, 10)
			if err != nil {
				t.Fatal(err)
			}
			_, rng, err := db.SubscriptionTxRange(ctx, alice.AccountID, "ETH", addrA, query.Range{}, nil, 10, 100)
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string][]query.Transaction{"Transactions": page, "SubscriptionTransactions": mine, "SubscriptionTxRange": rng.Txs} {
				if len(got) != len(want) {
					t.Fatalf("%s: %d transactions, want %d", name, len(got), len(want))
				}
				for i := range got {
					if w := want[len(want)-1-i]; fmt.Sprintf("%+v", got[i].Transfers) != fmt.Sprintf("%+v", w.Transfers) {
						t.Errorf("%s[%d].Transfers = %+v; want %+v", name, i, got[i].Transfers, w.Transfers)
					}
				}
			}
		}
		first := mint(1, "TKN", "Token \"one\" \u00e9", 6)
		if err := db.StoreBlock(ctx, "ETH", block(1), []query.Transaction{first}, nil); err != nil {
			t.Fatal(err)
		}
		reads(t, []query.Transaction{first})

		second := mint(2, "TKN2", "Token two", 8)
		if err := db.StoreBlock(ctx, "ETH", block(2), []query.Transaction{second}, nil); err != nil {
			t.Fatal(err)
		}
		again := mint(3, "TKN", "Token \"one\" \u00e9", 6)
		if err := db.StoreBlock(ctx, "ETH", block(3), []query.Transaction{again}, nil); err != nil {
			t.Fatal(err)
		}
		reads(t, []query.Transaction{first, second, again})

		var rows []struct {
			Symbol     string `bun:"symbol"`
			FirstBlock uint64 `bun:"first_block"`
		}
		if err := db.Bun().NewRaw("SELECT symbol, first_block FROM tokens WHERE chain = 'ETH' AND contract = ? ORDER BY id", token).Scan(ctx, &rows); err != nil {
			t.Fatal(err)
		}
		if want := []struct {
			Symbol     string `bun:"symbol"`
			FirstBlock uint64 `bun:"first_block"`
		}{{"TKN", 1}, {"TKN2", 2}}; !reflect.DeepEqual(rows, want) {
			t.Errorf("tokens = %+v, want %+v", rows, want)
		}
	})
}
