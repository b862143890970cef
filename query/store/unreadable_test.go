package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestUnreadableDocument: a transaction whose stored document cannot be
// read (as an older addrd wrote a symbol of invalid UTF-8: bun stored
// U+FFFD in place of the byte, and the lengths no longer matched) is
// that row alone, its key and why, in every read; the rest of the page
// is read (a page of such a row answered 500, for good).
func TestUnreadableDocument(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		key := booksKey(t, db, addrA)
		txs := []query.Transaction{tx(1, 0, addrA, addrB), tx(1, 1, addrA, addrB), tx(1, 2, addrB, addrA)}
		if err := db.StoreBlock(ctx, "ETH", block(1), txs, nil); err != nil {
			t.Fatal(err)
		}
		bad := txs[1]
		for _, tc := range []struct {
			name, doc string
			keyed     bool // the document's first fields read: the row has its hash
		}{
			{"lengths off", "1:41:166:" + bad.Hash + "1:14:0xb11:x1:11:2", true}, // as U+FFFD made one
			{"no version", "x", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				doc := tc.doc
				if err := db.DamageTxDoc(ctx, "ETH", bad.Hash, doc); err != nil {
					t.Fatal(err)
				}
				check := func(read string, got []query.Transaction, err error) {
					t.Helper()
					if err != nil {
						t.Fatalf("%s: %v", read, err)
					}
					if len(got) != 3 {
						t.Fatalf("%s: %d transactions, want 3", read, len(got))
					}
					damaged := 0
					for _, g := range got {
						if g.Unreadable == "" {
							if g.Hash == bad.Hash || len(g.Transfers) != 2 {
								t.Errorf("%s: a sound row read %+v", read, g)
							}
							continue
						}
						damaged++
						if !strings.Contains(g.Unreadable, "malformed transaction document") || tc.keyed && (g.Hash != bad.Hash || g.BlockNumber != 1 || g.Index != 1) {
							t.Errorf("%s: the damaged row is %+v", read, g)
						}
					}
					if damaged != 1 {
						t.Errorf("%s: %d rows say they cannot be read, want 1", read, damaged)
					}
				}
				got, err := db.Transactions(ctx, "ETH", addrA, nil, 10)
				check("Transactions", got, err)
				got, err = db.AccountTransactions(ctx, key.AccountID, "ETH", addrA, nil, 10)
				check("AccountTransactions", got, err)
				_, rng, err := db.SubscriptionTxRange(ctx, key.AccountID, "ETH", addrA, query.Range{}, nil, 10, 100)
				check("SubscriptionTxRange", rng.Txs, err)
				one, err := db.Transaction(ctx, "ETH", bad.Hash)
				if err != nil || one.Hash != bad.Hash || one.Unreadable == "" {
					t.Errorf("Transaction = %+v, %v; want its hash and why it cannot be read", one, err)
				}
			})
		}
	})
}
