package api_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
)

// booksHead is the newest stored block of the books tests.
const booksHead = 40

// booksTime is the time of block n in the books tests.
func booksTime(n uint64) time.Time { return time.Unix(int64(1_700_000_000+n*12), 0).UTC() }

// seedBooks gives addrA, covered from block 0, a statement of native and
// addrC rows over blocks 1 to 40 (every block native; every third the
// token), the transactions behind them (with addrB as counterparty on
// even blocks) and the balances that label them; the head is block 40.
// It returns the rows.
func seedBooks(t *testing.T, e *env) []query.BalanceChange {
	t.Helper()
	ctx := context.Background()
	e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
	e.cover(addrA)
	other := "0x00000000000000000000000000000000000000ee"
	balance := map[string]*big.Int{"": big.NewInt(5_000_000_000_000_000_000), addrC: big.NewInt(1_000_000)}
	var (
		rows []query.BalanceChange
		txs  []query.Transaction
	)
	for n := uint64(1); n <= booksHead; n++ {
		party := other
		if n%2 == 0 {
			party = addrB
		}
		t := tx(n, 0, addrA, party)
		txs = append(txs, t)
		value := big.NewInt(-int64(n) * 1_000_000_000_000_000)
		fee := big.NewInt(-21_000_000_000_000)
		sum := new(big.Int).Add(value, fee)
		balance[""].Add(balance[""], sum)
		rows = append(rows, query.BalanceChange{Chain: "ETH", Address: addrA, Block: n, Time: booksTime(n),
			Amount: query.AmountFromBig(sum), BalanceAfter: query.AmountFromBig(balance[""]), Checked: true, Reconciled: true, Internals: true,
			Causes: []query.Cause{{Kind: query.KindTransaction, TxHash: t.Hash, Amount: query.AmountFromBig(value)},
				{Kind: query.KindFee, TxHash: t.Hash, Amount: query.AmountFromBig(fee)}}})
		if n%3 == 0 {
			amount := big.NewInt(int64(n) * 1000)
			balance[addrC].Add(balance[addrC], amount)
			rows = append(rows, query.BalanceChange{Chain: "ETH", Address: addrA, Contract: addrC, Block: n, Time: booksTime(n),
				Amount: query.AmountFromBig(amount), BalanceAfter: query.AmountFromBig(balance[addrC]), Internals: true,
				Causes: []query.Cause{{Kind: query.KindToken, TxHash: t.Hash, Amount: query.AmountFromBig(amount)}}})
		}
	}
	balances := []query.Balance{
		{Chain: "ETH", Address: addrA, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Amount: query.AmountFromBig(balance[""]), Block: booksHead, Updated: booksTime(booksHead)},
		{Chain: "ETH", Address: addrA, Asset: query.AssetERC20, Contract: addrC, Symbol: "TKN", Decimals: 6, Amount: query.AmountFromBig(balance[addrC]), Block: booksHead, Updated: booksTime(booksHead)},
	}
	if err := e.db.PutTransactions(ctx, "ETH", txs); err != nil {
		t.Fatal(err)
	}
	if err := e.db.PutStatement(ctx, "ETH", rows, nil, balances); err != nil {
		t.Fatal(err)
	}
	if err := e.db.StoreBlock(ctx, "ETH", block(booksHead), nil, nil); err != nil {
		t.Fatal(err)
	}
	return rows
}

type booksRow struct {
	BlockNumber  uint64 `json:"block_number"`
	Time         string
	Contract     string
	Asset        string
	Symbol       string
	Decimals     int
	Amount       string
	BalanceAfter string `json:"balance_after"`
	Causes       []struct {
		Kind string
		Hash string `json:"transaction_hash"`
	}
}

type booksPage struct {
	BalanceChanges []booksRow `json:"balance_changes"`
	NextPageToken  string     `json:"next_page_token"`
}

// readAll reads every page of a statement list, and the keys of its rows
// ("block/contract").
func (e *env) readAll(path string) ([]booksRow, []string) {
	e.t.Helper()
	var rows []booksRow
	var keys []string
	tok := ""
	for range 100 {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		r := e.do("GET", path+sep+"page_size=4&page_token="+url.QueryEscape(tok), e.alice)
		e.want(r, 200, 0)
		var p booksPage
		if err := json.Unmarshal(r.body, &p); err != nil {
			e.t.Fatal(err)
		}
		for _, c := range p.BalanceChanges {
			rows = append(rows, c)
			keys = append(keys, fmt.Sprintf("%d/%s", c.BlockNumber, c.Contract))
		}
		if tok = p.NextPageToken; tok == "" {
			return rows, keys
		}
	}
	e.t.Fatalf("%s: more than 100 pages", path)
	return nil, nil
}

// TestBooksRanges: the statement and the transactions in a block or time
// range, oldest or newest first, filtered by kind, asset, contract and
// counterparty, paged; every statement row labelled as balances are.
func TestBooksRanges(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		seedBooks(t, e)
		path := "/v1/chains/ETH/addresses/" + addrA + "/balance_changes"
		keys := func(blocks []uint64, contract string) []string {
			var out []string
			for _, b := range blocks {
				out = append(out, fmt.Sprintf("%d/%s", b, contract))
			}
			return out
		}
		seq := func(from, to, step uint64) []uint64 {
			var out []uint64
			for b := from; b <= to; b += step {
				out = append(out, b)
			}
			return out
		}
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"start_block=10&end_block=13&order_by=block_number", []string{"10/", "11/", "12/", "12/" + addrC, "13/"}},
			{"start_block=10&end_block=13", []string{"13/", "12/" + addrC, "12/", "11/", "10/"}},
			{"start_block=10&end_block=13&order_by=block_number%20desc", []string{"13/", "12/" + addrC, "12/", "11/", "10/"}},
			{"asset=native&start_block=35&order_by=block_number", keys(seq(35, 40, 1), "")},
			{"contract=" + addrC + "&order_by=block_number", keys(seq(3, 39, 3), addrC)},
			{"asset=token&end_block=9&order_by=block_number", keys(seq(3, 9, 3), addrC)},
			{"kind=token&end_block=12&order_by=block_number", keys(seq(3, 12, 3), addrC)},
			{"kind=fee,token&start_block=5&end_block=6&order_by=block_number", []string{"5/", "6/", "6/" + addrC}},
			{"kind=withdrawal", nil},
			{"counterparty=" + addrB + "&asset=native&end_block=10&order_by=block_number", keys(seq(2, 10, 2), "")},
			// Times: block n is at 1,700,000,000 + 12n; the end is excluded.
			{"start_time=" + booksTime(5).Format(time.RFC3339) + "&end_time=" + booksTime(8).Format(time.RFC3339) + "&order_by=block_number",
				[]string{"5/", "6/", "6/" + addrC, "7/"}},
			{"start_time=" + url.QueryEscape(booksTime(5).Add(-time.Second).In(time.FixedZone("", 2*3600)).Format(time.RFC3339)) +
				"&end_time=" + url.QueryEscape(booksTime(6).Add(500*time.Millisecond).Format(time.RFC3339Nano)) + "&asset=native",
				[]string{"6/", "5/"}},
		} {
			rows, got := e.readAll(path + "?" + c.query)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s:\n got %v\nwant %v", c.query, got, c.want)
			}
			for _, r := range rows {
				want := [3]any{"native", "ETH", 18}
				if r.Contract == addrC {
					want = [3]any{"erc20", "TKN", 6}
				}
				if got := [3]any{r.Asset, r.Symbol, r.Decimals}; got != want {
					t.Errorf("%s: row %d/%s labelled %v, want %v", c.query, r.BlockNumber, r.Contract, got, want)
				}
			}
		}

		// The transactions, in the same style.
		txPath := "/v1/chains/ETH/addresses/" + addrA + "/transactions"
		for _, c := range []struct {
			query string
			want  []uint64
		}{
			{"start_block=38&order_by=block_number", []uint64{38, 39, 40}},
			{"end_block=3", []uint64{3, 2, 1}},
			{"counterparty=" + addrB + "&end_block=6&order_by=block_number", []uint64{2, 4, 6}},
			{"kind=fee&start_block=39", []uint64{40, 39}},
			{"kind=internal", nil},
			{"start_time=" + booksTime(20).Format(time.RFC3339) + "&end_time=" + booksTime(22).Format(time.RFC3339), []uint64{21, 20}},
		} {
			var got []uint64
			tok := ""
			for range 20 {
				r := e.do("GET", txPath+"?"+c.query+"&page_size=2&page_token="+url.QueryEscape(tok), e.alice)
				e.want(r, 200, 0)
				var p struct {
					Transactions []struct {
						BlockNumber uint64 `json:"block_number"`
					}
					NextPageToken string `json:"next_page_token"`
				}
				if err := json.Unmarshal(r.body, &p); err != nil {
					t.Fatal(err)
				}
				for _, tx := range p.Transactions {
					got = append(got, tx.BlockNumber)
				}
				if tok = p.NextPageToken; tok == "" {
					break
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("transactions %s: %v, want %v", c.query, got, c.want)
			}
		}
	})
}

// TestBooksDateOnly: a date alone is the midnight that starts it, UTC:
// the same rows and page as the RFC 3339 time; end_time=D ends the day
// before D.
func TestBooksDateOnly(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		seedBooks(t, e) // blocks 1 to 40 on 2023-11-14, from 22:13:32Z
		a := "/v1/chains/ETH/addresses/" + addrA
		for _, path := range []string{"/balance_changes", "/transactions", "/balance_changes:export"} {
			date := e.do("GET", a+path+"?start_time=2023-11-14&end_time=2023-11-15", e.alice)
			full := e.do("GET", a+path+"?start_time=2023-11-14T00:00:00Z&end_time=2023-11-15T00:00:00Z", e.alice)
			if date.status != 200 || string(date.body) != string(full.body) || len(date.body) < 100 {
				t.Errorf("GET %s with dates:\n%s\nwith RFC 3339 midnights:\n%s", path, date.body, full.body)
			}
		}
		none := e.do("GET", a+"/balance_changes?end_time=2023-11-14", e.alice)
		e.want(none, 200, 0)
		if rows, _ := none.json(t)["balance_changes"].([]any); len(rows) != 0 {
			t.Errorf("end_time=2023-11-14 (the midnight before every row) listed %d rows", len(rows))
		}
	})
}

// TestBooksBadInput: every malformed or impossible books request is 400
// with a message that names what is wrong.
func TestBooksBadInput(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		seedBooks(t, e)
		// addrB: covered from block 20 on.
		ctx := context.Background()
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrB, e.alice), 200, 0)
		if err := e.db.MarkSynced(ctx, "ETH", []string{addrB}, 20, 21); err != nil {
			t.Fatal(err)
		}
		// addrC: subscribed, not synced.
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrC, e.alice), 200, 0)
		a := "/v1/chains/ETH/addresses/" + addrA
		b := "/v1/chains/ETH/addresses/" + addrB
		c := "/v1/chains/ETH/addresses/" + addrC
		for _, tc := range []struct{ path, message string }{
			{a + "/balance_changes?start_block=9&end_block=3", "start_block 9 is after end_block 3: the range is reversed"},
			{a + "/transactions?start_block=9&end_block=3", "the range is reversed"},
			{a + "/balance_changes:export?start_block=9&end_block=3", "the range is reversed"},
			{a + "/balance_changes?start_time=2026-10-02T00:00:00Z&end_time=2026-10-01T00:00:00Z", "is not before end_time"},
			{a + "/balance_changes?start_time=2026-10-01T00:00:00Z&end_time=2026-10-01T00:00:00Z", "is not before end_time"},
			{a + "/balance_changes?start_time=2026-10-01T00:00:00", "has no time zone"},
			{a + "/balances?time=2026-10-01%2000:00:00", "has no time zone"},
			{a + "/balance_changes?start_time=yesterday", "must be an RFC 3339 time"},
			{a + "/balance_changes?kind=gift", "unknown kind 'gift'; kinds are transaction, internal"},
			{a + "/transactions?kind=fee,gift", "unknown kind 'gift'"},
			{a + "/balance_changes?order_by=time", "order_by must be"},
			{a + "/balance_changes?asset=erc20", "asset must be native or token"},
			{a + "/balance_changes?asset=native&contract=" + addrC, "name two assets"},
			{a + "/balance_changes?counterparty=0x12", "counterparty: malformed address"},
			{a + "/balance_changes?start_block=-1", "start_block must be a block number"},
			{a + "/balance_changes?start_block=1&start_block=2", "given 2 times"},
			{a + "/balance_changes?sort=asc", "unknown query parameter 'sort'"},
			{a + "/balance_changes:export?page_size=10", "an export is not paged"},
			{b + "/balance_changes?start_block=10", "start_block 10 is before the covered history of " + addrB + ", which starts at history_start_block 21"},
			{b + "/transactions?end_block=19", "end_block 19 is before the covered history"},
			{b + "/balance_changes:export?start_block=0", "start_block 0 is before the covered history"},
			{c + "/balance_changes?start_block=1", "is not covered yet (state SYNCING"},
			{a + "/balances?block_number=41", "block_number 41 is after the newest stored block, 40"},
			{b + "/balances?block_number=20", "block_number 20 is before the covered history of " + addrB + ", which starts at history_start_block 21"},
			{a + "/balances?time=" + booksTime(0).Format(time.RFC3339), "is before the statement of " + addrA + ", which starts at history_start_block 0"},
			{a + "/balances?time=" + booksTime(41).Format(time.RFC3339), "is after the newest stored block, 40 at"},
			{a + "/balances?block_number=3&time=" + booksTime(3).Format(time.RFC3339), "not both"},
			{a + "/balances?at=3", "unknown query parameter 'at'"},
			{a + "/balances?block_number=latest", "must be a block number (a non-negative decimal integer), finalized or safe, not 'latest'"},
			{a + "/balances?block_number=finalized", "no finalized block of ETH is recorded yet"},
		} {
			r := e.do("GET", tc.path, e.alice)
			e.want(r, 400, 3)
			if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, tc.message) {
				t.Errorf("GET %s: %q, want it to say %q", tc.path, msg, tc.message)
			}
		}
	})
}

// TestBooksPageTokenBindsFilters: a page token goes on only with the
// range and filters it was minted under; under others (or none, or from
// the plain list) it is refused by name, and it still works as minted.
func TestBooksPageTokenBindsFilters(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		seedBooks(t, e)
		for _, list := range []string{"balance_changes", "transactions"} {
			path := "/v1/chains/ETH/addresses/" + addrA + "/" + list + "?page_size=2"
			token := func(q string) string {
				r := e.do("GET", path+q, e.alice)
				e.want(r, 200, 0)
				tok, _ := r.json(t)["next_page_token"].(string)
				if tok == "" {
					t.Fatalf("%s%s: no next page", path, q)
				}
				return "&page_token=" + url.QueryEscape(tok)
			}
			filtered := "&kind=fee&start_block=3&order_by=block_number"
			tok, plain := token(filtered), token("")
			for _, q := range []string{
				"&kind=token&start_block=3&order_by=block_number" + tok, // kind changed
				"&kind=fee&start_block=4&order_by=block_number" + tok,   // range changed
				"&kind=fee&start_block=3" + tok,                         // order changed
				tok,                                                     // filters dropped
				filtered + plain,                                        // a plain list's token under filters
			} {
				r := e.do("GET", path+q, e.alice)
				e.want(r, 400, 3)
				if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, "page_token was minted for other query parameters") {
					t.Errorf("%s%s: %s", path, q, msg)
				}
			}
			e.want(e.do("GET", path+filtered+tok, e.alice), 200, 0)
			e.want(e.do("GET", path+plain, e.alice), 200, 0)
			// Bob, subscribed too, cannot use alice's token: it is bound to her.
			e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.bob), 200, 0)
			r := e.do("GET", path+filtered+tok, e.bob)
			e.want(r, 400, 3)
			if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, "invalid page_token") {
				t.Errorf("bob with alice's token: %s", msg)
			}
		}
	})
}

// TestBooksBalancesAt: the balances as of every block, and as of times
// between blocks, are what the statement's rows say (the balance after
// the last row at or before, else the opening balance of the first row),
// labelled, with the block they stand at.
func TestBooksBalancesAt(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		rows := seedBooks(t, e)
		path := "/v1/chains/ETH/addresses/" + addrA + "/balances"
		want := func(n uint64) map[string]string {
			out := map[string]string{}
			for _, r := range rows {
				if r.Block <= n {
					out[r.Contract] = r.BalanceAfter.String()
				} else if _, ok := out[r.Contract]; !ok {
					out[r.Contract] = r.BalanceAfter.Sub(r.Amount).String()
					if r.Block > n {
						out[r.Contract+"opening"] = "1"
					}
				}
			}
			return out
		}
		check := func(q string, n uint64) {
			t.Helper()
			r := e.do("GET", path+"?"+q, e.alice)
			e.want(r, 200, 0)
			var body struct {
				Balances []struct {
					Asset, Contract, Symbol, Amount string
					Decimals                        int
					BlockNumber                     uint64 `json:"block_number"`
				}
			}
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatal(err)
			}
			w := want(n)
			if len(body.Balances) != 2 || body.Balances[0].Contract != "" || body.Balances[0].Symbol != "ETH" || body.Balances[1].Symbol != "TKN" {
				t.Fatalf("%s: %s", q, r.body)
			}
			for _, b := range body.Balances {
				if b.Amount != w[b.Contract] || b.BlockNumber != n {
					t.Errorf("%s: %q %s at %d, want %s at %d", q, b.Contract, b.Amount, b.BlockNumber, w[b.Contract], n)
				}
			}
		}
		for n := uint64(0); n <= booksHead; n++ {
			check("block_number="+strconv.FormatUint(n, 10), n)
			switch {
			case n >= 1 && n < booksHead:
				check("time="+url.QueryEscape(booksTime(n).Add(7*time.Second).Format(time.RFC3339)), n)
			case n == booksHead: // after it, a block not stored yet may have come
				check("time="+url.QueryEscape(booksTime(n).Format(time.RFC3339)), n)
			}
		}
		// As of the chain's finality marks: what a month-end close reads.
		if err := e.db.SetFinality(context.Background(), "ETH", query.Finality{Safe: 30, Finalized: 25, Source: query.FinalityByNode}); err != nil {
			t.Fatal(err)
		}
		check("block_number=finalized", 25)
		check("block_number=safe", 30)
	})
}

// TestBooksExport: the CSV export of a month-like range: a header row,
// one record per statement row, amounts in base units and as exact
// decimals, and per asset the amounts add up to the difference of the
// balances at both ends.
func TestBooksExport(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		seedBooks(t, e)
		a := "/v1/chains/ETH/addresses/" + addrA
		r := e.do("GET", a+"/balance_changes:export?start_block=10&end_block=30", e.alice)
		if r.status != 200 || r.header.Get("Content-Type") != "text/csv; charset=utf-8; header=present" {
			t.Fatalf("export: %d %s\n%s", r.status, r.header.Get("Content-Type"), r.body)
		}
		records, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		header := "chain,address,block_number,time,asset,contract,token_id,symbol,decimals,amount,amount_decimal,balance_after,balance_after_decimal,kinds,transaction_hashes,reconciled,difference,fee_execution,fee_blob,fee_l1,fee_operator"
		if strings.Join(records[0], ",") != header {
			t.Fatalf("header %v", records[0])
		}
		_, keys := e.readAll(a + "/balance_changes?start_block=10&end_block=30&order_by=block_number")
		if len(records)-1 != len(keys) {
			t.Fatalf("%d records, the list has %d rows", len(records)-1, len(keys))
		}
		sums := map[string]*big.Int{"": new(big.Int), addrC: new(big.Int)}
		for i, rec := range records[1:] {
			if got := rec[2] + "/" + rec[5]; got != keys[i] {
				t.Fatalf("record %d is %s, the list's row %s", i, got, keys[i])
			}
			amount, _ := new(big.Int).SetString(rec[9], 10)
			sums[rec[5]].Add(sums[rec[5]], amount)
			dec, _ := strconv.Atoi(rec[8])
			for _, pair := range [][2]string{{rec[9], rec[10]}, {rec[11], rec[12]}} {
				r, ok := new(big.Rat).SetString(pair[1])
				base, _ := new(big.Rat).SetString(pair[0])
				if !ok || r.Cmp(base.Quo(base, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dec)), nil)))) != 0 {
					t.Fatalf("record %d: %s is not %s ÷ 10^%d", i, pair[1], pair[0], dec)
				}
			}
		}
		at := func(n int) map[string]*big.Int {
			r := e.do("GET", a+"/balances?block_number="+strconv.Itoa(n), e.alice)
			e.want(r, 200, 0)
			var body struct {
				Balances []struct{ Contract, Amount string }
			}
			json.Unmarshal(r.body, &body)
			out := map[string]*big.Int{}
			for _, b := range body.Balances {
				out[b.Contract], _ = new(big.Int).SetString(b.Amount, 10)
			}
			return out
		}
		open, end := at(9), at(30)
		for c, sum := range sums {
			if d := new(big.Int).Sub(end[c], open[c]); d.Cmp(sum) != 0 {
				t.Errorf("%q: the amounts add up to %s; the balances moved by %s", c, sum, d)
			}
		}
		if got := r.header.Get("Addrd-Subscription-State"); got != "ACTIVE" {
			t.Errorf("state header %q", got)
		}
		// Not subscribed: JSON, as every error.
		e.want(e.do("GET", "/v1/chains/ETH/addresses/"+addrB+"/balance_changes:export", e.alice), 401, 16)
	})
}

// cutStore holds the export's second batch until released, or fails it.
type cutStore struct {
	query.Store
	reached chan struct{}
	release chan struct{}
	fail    bool
}

func (s *cutStore) SubscriptionChangeRangeFunc(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int,
	fn func(*query.BalanceChange, query.Label) error) (query.Subscription, *query.ChangeCursor, error) {
	if after != nil {
		close(s.reached)
		<-s.release
		if s.fail {
			return query.Subscription{}, nil, errors.New("the database went away")
		}
	}
	return s.Store.SubscriptionChangeRangeFunc(ctx, account, chain, address, r, after, limit, budget, fn)
}

// TestBooksExportCut: an export whose client leaves halfway stops (the
// log says so) and leaves no goroutine behind; one cut by a server error
// ends without the final chunk, so the client sees a broken transfer,
// never a short file that looks whole. The export writes nothing on the
// server's side.
func TestBooksExportCut(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "client leaves", true: "server fails"}[fail], func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, t.TempDir()+"/addrd.db")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			k, secret, _ := db.CreateAPIKey(ctx, "alice")
			db.Subscribe(ctx, k.AccountID, "ETH", addrA)
			db.MarkSynced(ctx, "ETH", []string{addrA}, 0, 0)
			db.StoreBackfill(ctx, "ETH", query.BackfillJob{Addresses: []string{addrA}}, nil, nil, -1)
			db.BalancesStored(ctx, "ETH", []string{addrA}, 0)
			var rows []query.BalanceChange
			for n := uint64(1); n <= 5000; n++ {
				rows = append(rows, query.BalanceChange{Chain: "ETH", Address: addrA, Block: n, Time: booksTime(n), Amount: query.AmountOf(1),
					BalanceAfter: query.AmountOf(int64(n)), Causes: []query.Cause{{Kind: query.KindWithdrawal, Amount: query.AmountOf(1)}}})
			}
			for part := range slices.Chunk(rows, 1000) {
				if err := db.PutStatement(ctx, "ETH", part, nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.StoreBlock(ctx, "ETH", block(5000), nil, nil); err != nil {
				t.Fatal(err)
			}
			cs := &cutStore{Store: db, reached: make(chan struct{}), release: make(chan struct{}), fail: fail}
			logs := &testenv.Buffer{}
			srv := httptest.NewServer(api.New(api.Config{Store: cs, Chains: []string{"ETH"}, Syntax: evmSyntax("ETH"),
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
			defer srv.Close()
			before := runtime.NumGoroutine()

			client := &http.Client{Transport: &http.Transport{}}
			req, _ := http.NewRequest("GET", srv.URL+"/v1/chains/ETH/addresses/"+addrA+"/balance_changes:export", nil)
			req.SetBasicAuth(k.ID, secret)
			resp, err := client.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("export: %v %v", resp, err)
			}
			<-cs.reached // the first batch is written
			if !fail {
				head := make([]byte, 100)
				if _, err := io.ReadFull(resp.Body, head); err != nil || !strings.HasPrefix(string(head), "chain,address,") {
					t.Fatalf("the start of the file: %q, %v", head, err)
				}
				resp.Body.Close() // the client leaves
				client.Transport.(*http.Transport).CloseIdleConnections()
				close(cs.release)
				waitFor(t, func() bool { return strings.Contains(logs.String(), "export cut by the client") }, "the log to say the export was cut")
			} else {
				close(cs.release)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("an export cut by an error read %d bytes, then %v; want io.ErrUnexpectedEOF", len(body), err)
				}
				if resp.Trailer.Get("Addrd-Export-Rows") != "" {
					t.Errorf("a cut export has the trailer %q", resp.Trailer.Get("Addrd-Export-Rows"))
				}
				if !strings.Contains(logs.String(), "export cut by an error") {
					t.Errorf("log: %s", logs)
				}
			}
			client.Transport.(*http.Transport).CloseIdleConnections()
			srv.CloseClientConnections()
			waitFor(t, func() bool { return runtime.NumGoroutine() <= before }, fmt.Sprintf("the goroutines to go back to %d", before))
			// Nothing was written: the statement is as it was.
			n, err := db.AccountBalanceChanges(ctx, k.AccountID, "ETH", addrA, nil, 1000)
			if err != nil || len(n) != 1000 || n[0].Block != 5000 {
				t.Fatalf("after the export: %d rows, %v", len(n), err)
			}
		})
	}
}

// waitFor waits up to 10 s for cond, checking it every millisecond:
// what it waits for happens in other goroutines, on a loaded machine.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("waited 10 s for %s; goroutines:\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBooksSparseFilterBudget: a filter that matches one row of 12,000
// (a year of a busy address) answers its first page after reading
// 10,000 rows, with no row and a token to go on, not after reading the
// whole range; the token's page finds the row, and is the last.
func TestBooksSparseFilterBudget(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		e.cover(addrA)
		var rows []query.BalanceChange
		for n := uint64(1); n <= 12_000; n++ {
			kind := query.KindFee
			if n == 1 {
				kind = query.KindWithdrawal
			}
			rows = append(rows, query.BalanceChange{Chain: "ETH", Address: addrA, Block: n, Time: booksTime(n), Amount: query.MustParseAmount("1"),
				BalanceAfter: query.MustParseAmount(strconv.FormatUint(n, 10)), Causes: []query.Cause{{Kind: kind, Amount: query.MustParseAmount("1")}}})
		}
		for part := range slices.Chunk(rows, 2000) {
			if err := e.db.PutStatement(ctx, "ETH", part, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		path := "/v1/chains/ETH/addresses/" + addrA + "/balance_changes?kind=withdrawal&page_size=10"
		var pages []int
		tok := ""
		for range 5 {
			r := e.do("GET", path+"&page_token="+url.QueryEscape(tok), e.alice)
			e.want(r, 200, 0)
			var p booksPage
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatal(err)
			}
			pages = append(pages, len(p.BalanceChanges))
			if len(p.BalanceChanges) == 1 && p.BalanceChanges[0].BlockNumber != 1 {
				t.Fatalf("found block %d", p.BalanceChanges[0].BlockNumber)
			}
			if tok = p.NextPageToken; tok == "" {
				break
			}
		}
		if !slices.Equal(pages, []int{0, 1}) {
			t.Fatalf("pages of %v rows, want [0 1]: an empty page after the 10,000-row budget, then the row", pages)
		}
	})
}

// TestBooksEndAtFinality: end_block=finalized (and safe) ends the
// statement, the transactions and the export at the chain's mark as the
// fetcher recorded it, says which block in Addrd-End-Block, and keeps
// every page of a list at the block of its first page while the mark
// moves on; its page tokens are not those of end_block=N.
func TestBooksEndAtFinality(t *testing.T) {
	for _, d := range testenv.DBs() {
		t.Run(d.Name, func(t *testing.T) {
			var (
				mu  sync.Mutex
				now = time.Unix(1_800_000_000, 0)
			)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			tick := func() { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Minute) } // past the API's cache of the tip
			e := newEnvWith(t, d.DSN(t), func(c *api.Config) { c.Now = clock })
			ctx := context.Background()
			seedBooks(t, e)
			a := "/v1/chains/ETH/addresses/" + addrA
			// No mark recorded yet: 400 to the subscriber, NotSubscribed to anyone else.
			r := e.do("GET", a+"/balance_changes?end_block=finalized", e.alice)
			e.want(r, 400, 3)
			if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, "no finalized block of ETH is recorded yet") {
				t.Errorf("no mark: %s", msg)
			}
			e.want(e.do("GET", a+"/balance_changes?end_block=finalized", e.bob), 401, 16)
			e.want(e.do("GET", a+"/balance_changes:export?end_block=safe", e.bob), 401, 16)

			if err := e.db.SetFinality(ctx, "ETH", query.Finality{Safe: 30, Finalized: 25, Source: query.FinalityByNode}); err != nil {
				t.Fatal(err)
			}
			tick()
			for _, c := range []struct {
				mark string
				end  uint64
			}{{"finalized", 25}, {"safe", 30}} {
				path := a + "/balance_changes?order_by=block_number&end_block="
				rows, keys := e.readAll(path + c.mark)
				_, want := e.readAll(path + strconv.FormatUint(c.end, 10))
				if !slices.Equal(keys, want) || len(keys) == 0 {
					t.Fatalf("end_block=%s: rows %v, want those of end_block=%d: %v", c.mark, keys, c.end, want)
				}
				for _, row := range rows {
					if row.BlockNumber > c.end {
						t.Fatalf("end_block=%s: a row of block %d", c.mark, row.BlockNumber)
					}
				}
				r := e.do("GET", path+c.mark+"&page_size=1", e.alice)
				e.want(r, 200, 0)
				if got := r.header.Get("Addrd-End-Block"); got != strconv.FormatUint(c.end, 10) {
					t.Errorf("end_block=%s: Addrd-End-Block %q, want %d", c.mark, got, c.end)
				}
				var p struct {
					BalanceChanges []struct{ Finality string } `json:"balance_changes"`
				}
				if err := json.Unmarshal(r.body, &p); err != nil || len(p.BalanceChanges) != 1 {
					t.Fatalf("%s: %s", path, r.body)
				}
				if p.BalanceChanges[0].Finality != c.mark {
					if c.mark == "finalized" || p.BalanceChanges[0].Finality != "finalized" {
						t.Errorf("end_block=%s: a row says %s", c.mark, p.BalanceChanges[0].Finality)
					}
				}
			}
			// The transactions: ended at the mark too.
			var txs struct {
				Transactions []struct {
					BlockNumber uint64 `json:"block_number"`
				}
			}
			r = e.do("GET", a+"/transactions?end_block=safe&page_size=100", e.alice)
			e.want(r, 200, 0)
			if err := json.Unmarshal(r.body, &txs); err != nil {
				t.Fatal(err)
			}
			if len(txs.Transactions) != 30 || txs.Transactions[0].BlockNumber != 30 || r.header.Get("Addrd-End-Block") != "30" {
				t.Fatalf("transactions?end_block=safe: %d, newest %v, Addrd-End-Block %q", len(txs.Transactions), txs.Transactions[:1], r.header.Get("Addrd-End-Block"))
			}
			// The export: ended at the mark, as the list.
			r = e.do("GET", a+"/balance_changes:export?end_block=finalized", e.alice)
			if r.status != 200 || r.header.Get("Addrd-End-Block") != "25" {
				t.Fatalf("export: %d %q\n%s", r.status, r.header.Get("Addrd-End-Block"), r.body)
			}
			records, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			_, want := e.readAll(a + "/balance_changes?order_by=block_number&end_block=25")
			if len(records)-1 != len(want) || records[len(records)-1][2] != "25" {
				t.Fatalf("export: %d records, the last of block %s; want %d, the last of block 25", len(records)-1, records[len(records)-1][2], len(want))
			}

			// A list begun at finalized 25 ends there, page after page,
			// while the mark moves to 35; a new one ends at 35.
			path := a + "/balance_changes?order_by=block_number&end_block=finalized&page_size=4"
			r = e.do("GET", path, e.alice)
			e.want(r, 200, 0)
			var first booksPage
			if err := json.Unmarshal(r.body, &first); err != nil || first.NextPageToken == "" {
				t.Fatalf("first page: %s", r.body)
			}
			if err := e.db.SetFinality(ctx, "ETH", query.Finality{Safe: 38, Finalized: 35, Source: query.FinalityByNode}); err != nil {
				t.Fatal(err)
			}
			tick()
			var last uint64
			pages := 0
			for tok := first.NextPageToken; tok != ""; pages++ {
				r := e.do("GET", path+"&page_token="+url.QueryEscape(tok), e.alice)
				e.want(r, 200, 0)
				if got := r.header.Get("Addrd-End-Block"); got != "25" {
					t.Fatalf("page %d of the list begun at 25: Addrd-End-Block %q", pages+2, got)
				}
				var p booksPage
				if err := json.Unmarshal(r.body, &p); err != nil {
					t.Fatal(err)
				}
				for _, row := range p.BalanceChanges {
					last = row.BlockNumber
				}
				tok = p.NextPageToken
			}
			if last != 25 || pages == 0 {
				t.Fatalf("the list begun at finalized 25 ended at block %d after %d more pages", last, pages)
			}
			if _, keys := e.readAll(a + "/balance_changes?order_by=block_number&end_block=finalized"); !strings.HasPrefix(keys[len(keys)-1], "35/") {
				t.Fatalf("a list begun at finalized 35 ends at %s", keys[len(keys)-1])
			}

			// Tokens of end_block=N and end_block=finalized are not each other's.
			tokOf := func(q string) string {
				r := e.do("GET", a+"/balance_changes?page_size=2&"+q, e.alice)
				e.want(r, 200, 0)
				var p booksPage
				if err := json.Unmarshal(r.body, &p); err != nil || p.NextPageToken == "" {
					t.Fatalf("%s: %s", q, r.body)
				}
				return url.QueryEscape(p.NextPageToken)
			}
			for _, q := range []string{
				"end_block=35&page_token=" + tokOf("end_block=finalized"),
				"end_block=finalized&page_token=" + tokOf("end_block=35"),
				"end_block=safe&page_token=" + tokOf("end_block=finalized"),
				"end_block=finalized&page_token=" + tokOf(""),
			} {
				r := e.do("GET", a+"/balance_changes?page_size=2&"+q, e.alice)
				e.want(r, 400, 3)
				if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, "page_token was minted for other query parameters") {
					t.Errorf("%s: %s", q, msg)
				}
			}

			// A start after the mark is 400 naming both; other words are refused.
			for q, msg := range map[string]string{
				"start_block=36&end_block=finalized": "start_block 36 is after end_block=finalized, block 35",
				"end_block=latest":                   "end_block must be a block number (a non-negative decimal integer), finalized or safe",
			} {
				for _, p := range []string{"/balance_changes?", "/transactions?", "/balance_changes:export?"} {
					r := e.do("GET", a+p+q, e.alice)
					e.want(r, 400, 3)
					if got, _ := r.json(t)["message"].(string); !strings.Contains(got, msg) {
						t.Errorf("%s%s: %s, want %q", p, q, got, msg)
					}
				}
			}
		})
	}
}
