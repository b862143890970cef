package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/store/benchdata"
)

// TestTransactionsDocuments: a page read from the transaction documents
// (written by PutTransactions, or by benchdata's SQL) equals the page read
// by joining transactions and transfers, in what the columns hold; the
// documents hold the rest (version 4: gas, type, input, kinds and names
// of transfers) as benchdata seeds it, and say that their strings are
// plain.
func TestTransactionsDocuments(t *testing.T) {
	for _, d := range testenv.DBs() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, d.DSN(t), store.WithLegacyDetail(evm.LegacyDetail))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			key := newKey(t, db, "docs")
			err = benchdata.Seed(ctx, db, benchdata.Config{Chain: "ETH", Account: key.AccountID,
				Addresses: 20, Transactions: 2000, HotEvery: 5})
			if err != nil {
				t.Fatal(err)
			}
			for _, addr := range []string{benchdata.Address(1), benchdata.Address(7)} {
				var after *query.TxCursor
				for page := 0; ; page++ {
					got, err := db.Transactions(ctx, "ETH", addr, after, 70)
					if err != nil {
						t.Fatal(err)
					}
					want, err := db.TransactionsJoined(ctx, "ETH", addr, after, 70)
					if err != nil {
						t.Fatal(err)
					}
					for i := range got {
						if err := seeded(&got[i]); err != nil {
							t.Fatalf("%s page %d: %s: %v", addr, page, got[i].Hash, err)
						}
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s page %d: documents differ from the join:\n got %+v\nwant %+v", addr, page, got[:1], want[:1])
					}
					if len(got) < 70 {
						break
					}
					last := got[len(got)-1]
					after = &query.TxCursor{BlockNumber: last.BlockNumber, Index: last.Index}
				}
			}
			n := 0
			_, err = db.SubscriptionTransactionsFunc(ctx, key.AccountID, "ETH", benchdata.Address(1), nil, 70, func(tx *query.Transaction, plain bool) error {
				if n++; !plain {
					t.Errorf("%s: its document does not say it is plain", tx.Hash)
				}
				return nil
			})
			if err != nil || n != 70 {
				t.Fatalf("the page as the API reads it: %d transactions, %v", n, err)
			}
		})
	}
}

// seeded checks the fields of t's document (version 4) that the
// columns do not hold against what benchdata seeds, and clears them.
func seeded(t *query.Transaction) error {
	if d := evm.Detail(*t); d.Type != 2 || d.GasLimit != 21000 || d.GasUsed != 21000 || d.EffectiveGasPrice != query.AmountOf(1000000000) || d.Method != "" || d.Created != "" ||
		d.Input != "0x" || d.CumulativeGasUsed != uint64(t.Index+1)*21000 || d.RevertReason != "" {
		return fmt.Errorf("document fields %+v, not as seeded", *t)
	}
	t.Detail = evm.TxDetail{Nonce: evm.Detail(*t).Nonce}.JSON()
	for i := range t.Transfers {
		f := &t.Transfers[i]
		if f.Kind != query.KindTransaction || f.Symbol != "ETH" || f.Decimals != 18 || f.Name != "Ether" || f.TokenID != "" || f.CallType != "" {
			return fmt.Errorf("transfer %+v, not as seeded", *f)
		}
		f.Kind, f.Symbol, f.Decimals, f.Name = "", "", 0, ""
	}
	return nil
}
