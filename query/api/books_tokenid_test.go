package api_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/query"
)

// TestBooksTokenID: contract= with token_id= names one ERC-1155 holding,
// in the statement and in the transaction list, and contract= alone
// every id of the contract; token_id alone, or not a canonical decimal,
// is 400; a page token refuses a changed token_id.
func TestBooksTokenID(t *testing.T) {
	const multi = "0x00000000000000000000000000000000000000d1"
	dialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		e.cover(addrA)
		var (
			txs  []query.Transaction
			rows []query.BalanceChange
		)
		held := map[string]int64{}
		for n := uint64(1); n <= 6; n++ {
			id := "7"
			if n%2 == 0 {
				id = "8"
			}
			tr := tx(n, 0, addrB, addrA)
			tr.Transfers = append(tr.Transfers[:1], query.Transfer{Position: 0, Asset: query.AssetERC1155, Contract: multi, TokenID: id,
				From: addrB, To: addrA, Amount: query.AmountOf(1), Kind: query.KindToken})
			txs = append(txs, tr)
			key := query.HoldingKey(query.AssetERC1155, multi, id)
			held[key]++
			rows = append(rows, query.BalanceChange{Chain: "ETH", Address: addrA, Contract: key, Block: n, Time: block(n).Time,
				Amount: query.AmountOf(1), BalanceAfter: query.AmountOf(held[key]), Internals: true,
				Causes: []query.Cause{{Kind: query.KindToken, TxHash: tr.Hash, Amount: query.AmountOf(1)}}})
		}
		var balances []query.Balance
		for key, n := range held {
			balances = append(balances, query.Balance{Chain: "ETH", Address: addrA, Asset: query.AssetERC1155, Contract: key,
				Amount: query.AmountOf(n), Block: 6, Updated: block(6).Time})
		}
		if err := e.db.PutTransactions(ctx, "ETH", txs); err != nil {
			t.Fatal(err)
		}
		if err := e.db.PutStatement(ctx, "ETH", rows, nil, balances); err != nil {
			t.Fatal(err)
		}
		if err := e.db.StoreBlock(ctx, "ETH", block(6), nil, nil); err != nil {
			t.Fatal(err)
		}
		a := "/v1/chains/ETH/addresses/" + addrA
		blocks := func(path, list string) []string {
			t.Helper()
			r := e.do("GET", path, e.alice)
			e.want(r, 200, 0)
			var got []string
			for _, item := range r.json(t)[list].([]any) {
				m := item.(map[string]any)
				got = append(got, fmt.Sprint(m["block_number"]))
			}
			return got
		}
		for _, tc := range []struct{ path, list, want string }{
			{a + "/balance_changes?contract=" + multi + "&token_id=7&order_by=block_number", "balance_changes", "1 3 5"},
			{a + "/balance_changes?contract=" + multi + "&token_id=8&order_by=block_number", "balance_changes", "2 4 6"},
			{a + "/balance_changes?contract=" + multi + "&token_id=9", "balance_changes", ""},
			// The contract alone: every id of it.
			{a + "/balance_changes?contract=" + multi + "&order_by=block_number", "balance_changes", "1 2 3 4 5 6"},
			{a + "/balance_changes?contract=" + multi + "&start_block=2&end_block=5", "balance_changes", "5 4 3 2"},
			{a + "/balance_changes?contract=" + multi + "&kind=token&start_block=6", "balance_changes", "6"},
			{a + "/transactions?contract=" + multi + "&order_by=block_number", "transactions", "1 2 3 4 5 6"},
			{a + "/transactions?contract=" + multi + "&token_id=8&order_by=block_number", "transactions", "2 4 6"},
		} {
			if got := strings.Join(blocks(tc.path, tc.list), " "); got != tc.want {
				t.Errorf("%s: blocks %q, want %q", tc.path, got, tc.want)
			}
		}
		for _, tc := range []struct{ path, message string }{
			{a + "/balance_changes?token_id=7", "give contract=0x… with it"},
			{a + "/balance_changes?contract=" + multi + "&token_id=07", "token_id must be a token id in decimal"},
			{a + "/balance_changes?contract=" + multi + "&token_id=-1", "token_id must be a token id in decimal"},
			{a + "/balance_changes?contract=" + multi + "&token_id=" + strings.Repeat("9", 79), "token_id must be a token id in decimal"},
		} {
			r := e.do("GET", tc.path, e.alice)
			e.want(r, 400, 3)
			if msg := r.json(t)["message"].(string); !strings.Contains(msg, tc.message) {
				t.Errorf("%s: message %q, want it to say %q", tc.path, msg, tc.message)
			}
		}
		// The contract's ids, two rows a page: every row once, in order.
		var paged []string
		for tok, pages := "", 0; ; pages++ {
			if pages > 6 {
				t.Fatal("more than 6 pages of 6 rows")
			}
			r := e.do("GET", a+"/balance_changes?contract="+multi+"&page_size=2&page_token="+url.QueryEscape(tok), e.alice)
			e.want(r, 200, 0)
			body := r.json(t)
			for _, item := range body["balance_changes"].([]any) {
				m := item.(map[string]any)
				paged = append(paged, fmt.Sprint(m["block_number"], "/", m["token_id"]))
			}
			if tok, _ = body["next_page_token"].(string); tok == "" {
				break
			}
		}
		if got, want := strings.Join(paged, " "), "6/8 5/7 4/8 3/7 2/8 1/7"; got != want {
			t.Errorf("pages of the contract's ids: %q, want %q", got, want)
		}
		// The export of the contract: its six rows, oldest first, by id.
		r := e.do("GET", a+"/balance_changes:export?contract="+multi, e.alice)
		if r.status != 200 {
			t.Fatalf("export: %d\n%s", r.status, r.body)
		}
		records, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var exported []string
		for _, rec := range records[1:] {
			exported = append(exported, rec[2]+"/"+rec[6]) // block_number, token_id
		}
		if got, want := strings.Join(exported, " "), "1/7 2/8 3/7 4/8 5/7 6/8"; got != want {
			t.Errorf("export of the contract's ids: %q, want %q", got, want)
		}
		// A page of id 7, then its token under id 8: refused.
		r = e.do("GET", a+"/balance_changes?contract="+multi+"&token_id=7&page_size=1", e.alice)
		e.want(r, 200, 0)
		tok := r.json(t)["next_page_token"].(string)
		if tok == "" {
			t.Fatal("no next_page_token after one of three rows")
		}
		r = e.do("GET", a+"/balance_changes?contract="+multi+"&token_id=8&page_size=1&page_token="+url.QueryEscape(tok), e.alice)
		e.want(r, 400, 3)
	})
}
