package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestHostileStrings: a block whose transaction, transfer or balance
// holds a string no database keeps as text (a NUL byte: bun wrote an
// error marker into the SQL and the block failed for ever; invalid UTF-8:
// bun wrote U+FFFD, the document's lengths no longer matched and the page
// answered 500) or a string from the chain beyond its bound (100 KB
// copied into every transfer) is stored all the same, the field made
// clean text; the field is recorded in the quarantine and told to the
// hook, and the pages read.
func TestHostileStrings(t *testing.T) {
	big := strings.Repeat("A", 100_000)
	for _, tc := range []struct {
		name  string
		set   func(t *query.Transaction, b *query.Balance)
		field string
		get   func(t query.Transaction) string
		want  string
	}{
		{"NUL in a symbol", func(t *query.Transaction, _ *query.Balance) { t.Transfers[1].Symbol = "US\x00DC" },
			"transfers[1].symbol", func(t query.Transaction) string { return t.Transfers[1].Symbol }, "USDC"},
		{"a detail that is not JSON", func(t *query.Transaction, _ *query.Balance) { t.Detail = []byte(`{"revert_reason":"no`) },
			"detail", func(t query.Transaction) string { return string(t.Detail) }, ""},
		{"invalid UTF-8 in a detail", func(t *query.Transaction, _ *query.Balance) { t.Detail = []byte("{\"revert_reason\":\"\xff\"}") },
			"detail", func(t query.Transaction) string { return string(t.Detail) }, ""},
		{"NUL in a party", func(t *query.Transaction, _ *query.Balance) { t.Parties = []string{"0x0e\x00"} },
			"parties[0]", func(t query.Transaction) string { return t.Parties[0] }, "0x0e"},
		{"invalid UTF-8 in a symbol", func(t *query.Transaction, _ *query.Balance) { t.Transfers[1].Symbol = "M\xffKR" },
			"transfers[1].symbol", func(t query.Transaction) string { return t.Transfers[1].Symbol }, "M\ufffdKR"},
		{"invalid UTF-8 in a name", func(t *query.Transaction, _ *query.Balance) { t.Transfers[1].Name = "\xc3(" },
			"transfers[1].name", func(t query.Transaction) string { return t.Transfers[1].Name }, "\ufffd("},
		{"100 KB name", func(t *query.Transaction, _ *query.Balance) { t.Transfers[1].Name = big },
			"transfers[1].name", func(t query.Transaction) string { return t.Transfers[1].Name }, big[:query.MaxName]},
		{"100 KB symbol", func(t *query.Transaction, _ *query.Balance) { t.Transfers[1].Symbol = big },
			"transfers[1].symbol", func(t query.Transaction) string { return t.Transfers[1].Symbol }, big[:query.MaxSymbol]},
		{"bidi and controls in an error", func(t *query.Transaction, _ *query.Balance) { t.Transfers[1].Error = "\u202eno\r\n" },
			"transfers[1].error", func(t query.Transaction) string { return t.Transfers[1].Error }, "no"},
		{"NUL in a balance's name", func(_ *query.Transaction, b *query.Balance) { b.Name = "x\x00" }, "balance.name", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.ForEachDB(t, func(t *testing.T, dsn string) {
				ctx := context.Background()
				var (
					mu   sync.Mutex
					told []query.Quarantined
				)
				db := open(t, dsn, store.WithQuarantine(func(q query.Quarantined) {
					mu.Lock()
					defer mu.Unlock()
					told = append(told, q)
				}))
				tr := tx(1, 0, addrA, addrB)
				tr.Transfers[1].Symbol, tr.Transfers[1].Name = "TKN", "Token"
				bal := query.Balance{Chain: "ETH", Address: addrA, Asset: query.AssetERC20, Contract: addrC, Symbol: "TKN",
					Amount: query.AmountOf(5), Block: 1, Updated: time.Unix(1_700_000_000, 0).UTC()}
				tc.set(&tr, &bal)
				kept := tr
				if err := db.StoreBlock(ctx, "ETH", block(1), []query.Transaction{tr}, []query.Balance{bal}); err != nil {
					t.Fatalf("StoreBlock: %v", err)
				}
				if cp, _, err := db.Checkpoint(ctx, "ETH"); err != nil || cp.Number != 1 {
					t.Fatalf("Checkpoint = %d, %v; want 1: the block goes on", cp.Number, err)
				}
				page, err := db.Transactions(ctx, "ETH", addrA, nil, 10)
				if err != nil || len(page) != 1 {
					t.Fatalf("Transactions = %d, %v", len(page), err)
				}
				one, err := db.Transaction(ctx, "ETH", tr.Hash)
				if err != nil {
					t.Fatalf("Transaction: %v", err)
				}
				if tc.get != nil {
					for _, got := range []string{tc.get(page[0]), tc.get(one)} {
						if got != tc.want {
							t.Errorf("stored %.60q, want %.60q", got, tc.want)
						}
					}
				} else {
					bals, err := db.Balances(ctx, "ETH", addrA)
					if err != nil || len(bals) != 1 || !query.IsChainText(bals[0].Name, query.MaxName) {
						t.Fatalf("Balances = %+v, %v", bals, err)
					}
				}
				if kept.Transfers[1].Symbol != tr.Transfers[1].Symbol || &kept.Transfers[0] != &tr.Transfers[0] {
					t.Errorf("the caller's transaction was changed")
				}
				q, err := db.Quarantine(ctx, "ETH", 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(q) != 1 || q[0].Field != tc.field || q[0].Block != 1 || q[0].Reason == "" {
					t.Fatalf("Quarantine = %+v, want one row of %s at block 1", q, tc.field)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(told) != 1 || told[0] != q[0] {
					t.Errorf("told %+v, stored %+v", told, q)
				}
			})
		})
	}
}

// TestCleanStringsNotQuarantined: a block of ordinary strings (unicode
// included) is stored as it came and quarantines nothing.
func TestCleanStringsNotQuarantined(t *testing.T) {
	testenv.ForEachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := open(t, dsn)
		tr := tx(1, 0, addrA, addrB)
		tr.Transfers[1].Symbol, tr.Transfers[1].Name = "Ünï 🚀", "=SUM(A1) \"quoted\" <b>"
		tr.Detail = []byte(`{"revert_reason":"Panic(0x11) \u003cb\u003e é"}`)
		if err := db.StoreBlock(ctx, "ETH", block(1), []query.Transaction{tr}, nil); err != nil {
			t.Fatal(err)
		}
		got, err := db.Transaction(ctx, "ETH", tr.Hash)
		if err != nil || got.Transfers[1].Name != tr.Transfers[1].Name || got.Transfers[1].Symbol != tr.Transfers[1].Symbol || string(got.Detail) != string(tr.Detail) {
			t.Fatalf("Transaction = %+v, %v", got, err)
		}
		if q, err := db.Quarantine(ctx, "ETH", 10); err != nil || len(q) != 0 {
			t.Fatalf("Quarantine = %+v, %v; want none", q, err)
		}
	})
}
