package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is a running API over a fresh database with two requesters.
type env struct {
	t      *testing.T
	db     *store.DB
	url    string
	alice  key
	bob    key
	logbuf *testenv.Buffer
}

type key struct{ id, secret string }

// dialects runs f against SQLite and PostgreSQL.
func dialects(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	for _, d := range testenv.DBs() {
		t.Run(d.Name, func(t *testing.T) { f(t, newEnv(t, d.DSN(t))) })
	}
}

func newEnv(t *testing.T, dsn string) *env { return newEnvWith(t, dsn, nil) }

// newEnvWith is newEnv with the API's config adjusted by configure (nil:
// as it is) and the store opened with opts.
// evmSyntax is api.Config.Syntax for the EVM chains names.
func evmSyntax(names ...string) map[string]chain.Syntax {
	out := make(map[string]chain.Syntax, len(names))
	for _, n := range names {
		out[n] = evm.Syntax{}
	}
	return out
}

func newEnvWith(t *testing.T, dsn string, configure func(*api.Config), opts ...store.Option) *env {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	logbuf := &testenv.Buffer{}
	cfg := api.Config{
		Store:   db,
		Chains:  []string{"ETH", "TST"},
		Syntax:  evmSyntax("ETH", "TST"),
		Logger:  slog.New(slog.NewJSONHandler(logbuf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics: prometheus.NewRegistry(),
	}
	if configure != nil {
		configure(&cfg)
	}
	h := api.New(cfg)
	srv := httptest.NewServer(validated(t, h))
	t.Cleanup(srv.Close)
	e := &env{t: t, db: db, url: srv.URL, logbuf: logbuf}
	e.alice = e.newKey("alice")
	e.bob = e.newKey("bob")
	return e
}

func (e *env) newKey(name string) key {
	e.t.Helper()
	k, secret, err := e.db.CreateAPIKey(context.Background(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	return key{k.ID, secret}
}

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// do sends a request as k (no credentials when k is the zero key).
func (e *env) do(method, path string, k key) response {
	e.t.Helper()
	return e.doFrom("", method, path, k)
}

// doFrom is do with an X-Forwarded-For header (none when xff is "").
func (e *env) doFrom(xff, method, path string, k key) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if k.id != "" {
		req.SetBasicAuth(k.id, k.secret)
	}
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

// want checks the status and, for errors, the JSON error body's code.
func (e *env) want(r response, status, code int) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("Content-Type %q; body %s", ct, r.body)
	}
	if code != 0 {
		m := r.json(e.t)
		if m["code"] != float64(code) || m["status"] == "" || m["message"] == "" {
			e.t.Fatalf("error body %s, want code %d", r.body, code)
		}
	}
}

const (
	addrA   = "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"
	addrA55 = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	addrB   = "0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359"
	addrC   = "0xdbf03b407c01e7cd3cbea99509d93f8dddc8c6fb"
)

func TestSubscriptionLifecycle(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		path := "/v1/chains/ETH/addresses/" + addrA55
		for range 2 { // idempotent
			r := e.do("PUT", path, e.alice)
			e.want(r, 200, 0)
			if got, want := string(r.body), `{"name":"chains/ETH/addresses/`+addrA+`","state":"SYNCING","history_start_block":null,"sync_problem":null}`+"\n"; got != want {
				t.Fatalf("PUT body %s, want %s", got, want)
			}
		}
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrB, e.alice), 200, 0)
		e.want(e.do("PUT", "/v1/chains/TST/addresses/"+addrA, e.alice), 200, 0)

		r := e.do("GET", "/v1/addresses", e.alice)
		e.want(r, 200, 0)
		want := `{"addresses":["chains/ETH/addresses/` + addrA + `","chains/ETH/addresses/` + addrB +
			`","chains/TST/addresses/` + addrA + `"],"next_page_token":"","total_size":3}` + "\n"
		if string(r.body) != want {
			t.Fatalf("GET /v1/addresses = %s\nwant %s", r.body, want)
		}
		r = e.do("GET", "/v1/chains/TST/addresses", e.alice)
		if m := r.json(t); m["total_size"] != 1.0 {
			t.Fatalf("TST list %s", r.body)
		}
		r = e.do("GET", "/v1/addresses", e.bob)
		if string(r.body) != `{"addresses":[],"next_page_token":"","total_size":0}`+"\n" {
			t.Fatalf("bob's list %s", r.body)
		}

		// Stored data is readable while subscribed, not after.
		e.want(e.do("GET", path+"/balances", e.alice), 200, 0)
		r = e.do("DELETE", path, e.alice)
		e.want(r, 200, 0)
		if string(r.body) != "{}\n" {
			t.Fatalf("DELETE body %s", r.body)
		}
		r = e.do("DELETE", path, e.alice)
		e.want(r, 404, 5)
		for _, p := range []string{path + "/balances", path + "/transactions"} {
			r = e.do("GET", p, e.alice)
			e.want(r, 401, 16)
			want := `{"code":16,"message":"requester is not subscribed for address '` + addrA + `'","status":"Unauthenticated"}` + "\n"
			if string(r.body) != want {
				t.Fatalf("GET %s after DELETE = %s\nwant %s", p, r.body, want)
			}
		}
		// Resubscribing makes it readable again.
		e.want(e.do("PUT", path, e.alice), 200, 0)
		e.want(e.do("GET", path+"/balances", e.alice), 200, 0)
	})
}

func TestAddressListPages(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		var all []string
		for i := range 7 {
			a := fmt.Sprintf("0x%040x", i+1)
			e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+a, e.alice), 200, 0)
			all = append(all, "chains/ETH/addresses/"+a)
		}
		var got []string
		tok := ""
		for i, size := range []int{3, 2, 5} {
			r := e.do("GET", fmt.Sprintf("/v1/chains/ETH/addresses?page_size=%d&page_token=%s", size, tok), e.alice)
			e.want(r, 200, 0)
			var page struct {
				Addresses     []string `json:"addresses"`
				NextPageToken string   `json:"next_page_token"`
				TotalSize     int      `json:"total_size"`
			}
			json.Unmarshal(r.body, &page)
			if page.TotalSize != 7 {
				t.Fatalf("total_size %d", page.TotalSize)
			}
			got = append(got, page.Addresses...)
			tok = page.NextPageToken
			if (i == 2) != (tok == "") {
				t.Fatalf("page %d: next_page_token %q", i, tok)
			}
		}
		if !slices.Equal(got, all) {
			t.Fatalf("pages %v\nwant %v", got, all)
		}
		// The token of one list is not taken by another, nor by another requester.
		r := e.do("GET", "/v1/chains/ETH/addresses?page_size=1", e.alice)
		tok = r.json(t)["next_page_token"].(string)
		e.want(e.do("GET", "/v1/addresses?page_token="+tok, e.alice), 400, 3)
		e.want(e.do("GET", "/v1/chains/ETH/addresses?page_token="+tok, e.bob), 400, 3)
		e.want(e.do("GET", "/v1/chains/ETH/addresses?page_token="+tok, e.alice), 200, 0)
	})
}

func TestAuth(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		for _, c := range []struct {
			name string
			k    key
		}{
			{"Missing", key{}},
			{"WrongSecret", key{e.alice.id, e.bob.secret}},
			{"UnknownID", key{"ak0000", e.alice.secret}},
			{"SQLInID", key{"' OR ''='", "x"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				for _, p := range []string{"/v1/addresses", "/v1/chains/ETH/addresses/" + addrA + "/balances"} {
					r := e.do("GET", p, c.k)
					e.want(r, 401, 16)
					if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
						t.Fatalf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
					}
				}
			})
		}
		t.Run("RevokedMidSession", func(t *testing.T) {
			k := e.newKey("alice")
			e.want(e.do("GET", "/v1/addresses", k), 200, 0)
			if err := e.db.RevokeAPIKey(context.Background(), k.id); err != nil {
				t.Fatal(err)
			}
			e.want(e.do("GET", "/v1/addresses", k), 401, 16)
			e.want(e.do("GET", "/v1/addresses", e.alice), 200, 0) // the account's other key still works
		})
		t.Run("SecondKeySameAccount", func(t *testing.T) {
			k := e.newKey("alice")
			e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrC, k), 200, 0)
			e.want(e.do("GET", "/v1/chains/ETH/addresses/"+addrC+"/balances", e.alice), 200, 0)
		})
		t.Run("OpenAPINeedsNone", func(t *testing.T) {
			if r := e.do("GET", "/v1/openapi.yaml", key{}); r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
		})
	})
}

func TestAnotherRequestersAddress(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		r := e.do("GET", "/v1/chains/ETH/addresses/"+addrA+"/balances", e.bob)
		e.want(r, 401, 16)
		if !strings.Contains(string(r.body), "requester is not subscribed for address '"+addrA+"'") {
			t.Fatalf("body %s", r.body)
		}
		e.want(e.do("DELETE", "/v1/chains/ETH/addresses/"+addrA, e.bob), 404, 5)
		// Bob's DELETE did not touch alice's subscription.
		e.want(e.do("GET", "/v1/chains/ETH/addresses/"+addrA+"/balances", e.alice), 200, 0)
	})
}

func TestBadInput(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		base := "/v1/chains/ETH/addresses/" + addrA + "/transactions"
		for _, c := range []struct {
			name, method, path string
			status, code       int
		}{
			{"SQLAddress", "PUT", "/v1/chains/ETH/addresses/0x'%20OR%201=1--", 400, 3},
			{"SQLAddressExact", "PUT", "/v1/chains/ETH/addresses/0x'%3BDROP%20TABLE%20subscriptions%3B--aaaaaaaaaaaa", 400, 3},
			{"UnicodeAddress", "PUT", "/v1/chains/ETH/addresses/0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaé", 400, 3},
			{"UnicodeAddressFullwidth", "GET", "/v1/chains/ETH/addresses/０x5aaeb6053f3e94c9b9a09f33669435e7ef1bea/balances", 400, 3},
			{"BadChecksum", "PUT", "/v1/chains/ETH/addresses/0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", 400, 3},
			{"UnknownChain", "PUT", "/v1/chains/BTC/addresses/" + addrA, 400, 3},
			{"LowercaseChain", "GET", "/v1/chains/eth/addresses", 400, 3},
			{"LongPath", "GET", "/v1/chains/ETH/addresses/" + strings.Repeat("a", 10_000) + "/balances", 400, 3},
			{"LongQuery", "GET", base + "?page_token=" + strings.Repeat("A", 10_000), 400, 3},
			{"PageSizeNegative", "GET", base + "?page_size=-1", 400, 3},
			{"PageSizeText", "GET", base + "?page_size=abc", 400, 3},
			{"PageSizeExponent", "GET", base + "?page_size=1e9", 400, 3},
			{"PageSizeFraction", "GET", base + "?page_size=1.5", 400, 3},
			{"PageSizeTwice", "GET", base + "?page_size=1&page_size=2", 400, 3},
			{"PageSizeZero", "GET", base + "?page_size=0", 200, 0},
			{"PageSizeHuge", "GET", base + "?page_size=1000000000", 200, 0},
			{"PageSizeOverflow", "GET", base + "?page_size=99999999999999999999999", 200, 0},
			{"UnknownParam", "GET", base + "?pagesize=5", 400, 3},
			{"MalformedQuery", "GET", base + "?page_size=%zz", 400, 3},
			{"ParamOnBalances", "GET", "/v1/chains/ETH/addresses/" + addrA + "/balances?x=1", 400, 3},
			{"BadHash", "GET", "/v1/chains/ETH/transactions/0x1234", 400, 3},
			{"UnknownPath", "GET", "/v1/nothing", 404, 5},
			{"UnknownPathDeep", "GET", "/v1/chains/ETH/addresses/" + addrA + "/nfts", 404, 5},
			{"Root", "GET", "/", 404, 5},
			{"V2", "GET", "/v2/addresses", 404, 5},
		} {
			t.Run(c.name, func(t *testing.T) {
				e.want(e.do(c.method, c.path, e.alice), c.status, c.code)
			})
		}
		t.Run("WrongMethod", func(t *testing.T) {
			r := e.do("POST", "/v1/chains/ETH/addresses/"+addrA, e.alice)
			e.want(r, 405, 12)
			allow := r.header.Get("Allow")
			for _, m := range []string{"PUT", "DELETE"} {
				if !strings.Contains(allow, m) {
					t.Fatalf("Allow %q lacks %s", allow, m)
				}
			}
			e.want(e.do("DELETE", "/v1/addresses", e.alice), 405, 12)
		})
		t.Run("PageSizeCoercedToMax", func(t *testing.T) {
			// Seen in the page: at most 1000, so a store of 1001 gives a token.
			var txs []query.Transaction
			for i := range 1001 {
				txs = append(txs, tx(uint64(1+i/10), uint(i%10), addrA, addrB))
			}
			if err := e.db.PutTransactions(context.Background(), "ETH", txs); err != nil {
				t.Fatal(err)
			}
			e.cover(addrA)
			r := e.do("GET", base+"?page_size=5000", e.alice)
			e.want(r, 200, 0)
			var page struct {
				Transactions  []json.RawMessage `json:"transactions"`
				NextPageToken string            `json:"next_page_token"`
			}
			json.Unmarshal(r.body, &page)
			if len(page.Transactions) != 1000 || page.NextPageToken == "" {
				t.Fatalf("page of %d, token %q", len(page.Transactions), page.NextPageToken)
			}
			r = e.do("GET", base+"?page_size=0", e.alice)
			json.Unmarshal(r.body, &page)
			if len(page.Transactions) != 50 {
				t.Fatalf("default page of %d", len(page.Transactions))
			}
		})
	})
}

// tx builds a transaction at block n, index i, with a native transfer and
// an ERC-20 transfer between other parties.
func tx(n uint64, i uint, from, to string) query.Transaction {
	return query.Transaction{
		Chain: "ETH", Hash: fmt.Sprintf("0x%056x%08x", n, i), BlockNumber: n, BlockHash: fmt.Sprintf("0x%064x", n),
		BlockTime: time.Unix(int64(1_700_000_000+n*12), 0).UTC(), Index: i, Status: query.StatusSuccess,
		From: from, To: to, Value: query.MustParseAmount("1000000000000000000"), Fee: query.AmountOf(21000000000000),
		Detail: evm.TxDetail{Nonce: n, Type: 2, GasLimit: 60000, GasUsed: 21000, EffectiveGasPrice: query.AmountOf(1000000000), Method: "0xa9059cbb"}.JSON(),
		Transfers: []query.Transfer{
			{Position: -1, Asset: query.AssetNative, From: from, To: to, Amount: query.MustParseAmount("1000000000000000000"), Kind: query.KindTransaction,
				Symbol: "ETH", Decimals: 18},
			{Position: int(i), Asset: query.AssetERC20, Contract: addrC, From: to, To: addrC, Amount: query.AmountOf(5), Kind: query.KindToken,
				Symbol: "TKN", Decimals: 6},
		},
	}
}

func block(n uint64) query.Block {
	return query.Block{Number: n, Hash: fmt.Sprintf("0x%064x", n), ParentHash: fmt.Sprintf("0x%064x", n-1),
		Time: time.Unix(int64(1_700_000_000+n*12), 0).UTC()}
}

func TestTransactions(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		// 30 blocks of 4 transactions, stored as the fetcher does.
		for n := uint64(1); n <= 30; n++ {
			var txs []query.Transaction
			for i := range uint(4) {
				from, to := addrA, addrB
				if i%2 == 1 {
					from, to = addrB, addrA
				}
				txs = append(txs, tx(n, i, from, to))
			}
			if err := e.db.StoreBlock(ctx, "ETH", block(n), txs, nil); err != nil {
				t.Fatal(err)
			}
		}
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrB, e.bob), 200, 0)
		e.cover(addrA, addrB)
		base := "/v1/chains/ETH/addresses/" + addrA + "/transactions"

		type page struct {
			Transactions []struct {
				Hash        string `json:"hash"`
				BlockNumber uint64 `json:"block_number"`
				Index       uint   `json:"index"`
				Transfers   []struct {
					From string `json:"from"`
					To   string `json:"to"`
				} `json:"transfers"`
			} `json:"transactions"`
			NextPageToken string `json:"next_page_token"`
		}
		get := func(path string, k key) page {
			t.Helper()
			r := e.do("GET", path, k)
			e.want(r, 200, 0)
			var p page
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatal(err)
			}
			return p
		}
		// page_size 1 is the most recent; sizes change between pages.
		p := get(base+"?page_size=1", e.alice)
		if len(p.Transactions) != 1 || p.Transactions[0].BlockNumber != 30 || p.Transactions[0].Index != 3 {
			t.Fatalf("most recent: %+v", p.Transactions)
		}
		var seen []string
		seen = append(seen, p.Transactions[0].Hash)
		tok := p.NextPageToken
		for _, size := range []int{7, 50, 13, 1000} {
			p = get(fmt.Sprintf("%s?page_size=%d&page_token=%s", base, size, tok), e.alice)
			for _, tr := range p.Transactions {
				seen = append(seen, tr.Hash)
				// In a list, only the transfers touching the address.
				for _, f := range tr.Transfers {
					if f.From != addrA && f.To != addrA {
						t.Fatalf("transfer %+v does not touch %s", f, addrA)
					}
				}
			}
			if tok = p.NextPageToken; tok == "" {
				break
			}
		}
		if len(seen) != 120 || tok != "" {
			t.Fatalf("walked %d transactions, last token %q", len(seen), tok)
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] >= seen[i-1] { // hashes encode (block, index) in order
				t.Fatalf("not most recent first at %d: %s after %s", i, seen[i], seen[i-1])
			}
		}

		p = get(base+"?page_size=2", e.alice)
		tok = p.NextPageToken
		forged := []byte(tok)
		forged[len(forged)/2] ^= 0x01
		if forged[len(forged)/2] == '.' {
			forged[len(forged)/2] = 'A'
		}
		// Not subscribed is answered first, whatever the token.
		e.want(e.do("GET", base+"?page_token="+tok, e.bob), 401, 16)
		e.want(e.do("GET", base+"?page_token=not-a-token", e.bob), 401, 16)
		for _, c := range []struct {
			name, path string
			k          key
		}{
			{"Forged", base + "?page_token=" + string(forged), e.alice},
			{"Truncated", base + "?page_token=" + tok[:len(tok)-3], e.alice},
			{"Garbage", base + "?page_token=not-a-token", e.alice},
			{"OtherAddress", "/v1/chains/ETH/addresses/" + addrB + "/transactions?page_token=" + tok, e.bob},
			{"OtherRequester", base + "?page_token=" + tok, e.bob},
			{"AddressListToken", "/v1/addresses?page_token=" + tok, e.alice},
		} {
			t.Run(c.name, func(t *testing.T) {
				if c.name == "OtherRequester" {
					e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.bob), 200, 0)
				}
				e.want(e.do("GET", c.path, c.k), 400, 3)
			})
		}
	})
}

func TestTransactionByHash(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		want := tx(7, 2, addrA, addrB)
		want.Status = query.StatusFailed
		d := evm.Detail(want)
		d.Input, d.CumulativeGasUsed, d.RevertReason = "0xa9059cbb00", 63000, "Panic(0x11): arithmetic underflow or overflow"
		want.Detail = d.JSON()
		want.Transfers = append(want.Transfers,
			query.Transfer{Position: -2, Asset: query.AssetNative, From: addrB, To: addrC, Amount: query.AmountOf(7), Kind: query.KindInternal,
				Symbol: "ETH", Decimals: 18, CallType: "CALL", CallPath: "0.1", Error: "execution reverted"},
			query.Transfer{Position: 3, Asset: query.AssetERC1155, Contract: addrC, From: addrB, To: addrA, Amount: query.AmountOf(4), Kind: query.KindToken,
				Symbol: "ITM", Name: "Items \"<1155>\"", TokenID: "115792089237316195423570985008687907853269984665640564039457584007913129639935"})
		if err := e.db.StoreBlock(ctx, "ETH", block(7), []query.Transaction{want}, nil); err != nil {
			t.Fatal(err)
		}
		if err := e.db.SetFinality(ctx, "ETH", query.Finality{Safe: 7, Finalized: 6, Source: query.FinalityByNode}); err != nil {
			t.Fatal(err)
		}
		path := "/v1/chains/ETH/transactions/" + want.Hash
		e.want(e.do("GET", path, e.alice), 404, 5) // not subscribed: it does not exist for alice
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrB, e.alice), 200, 0)
		e.cover(addrB)
		r := e.do("GET", strings.ToUpper(path[:len(path)-64])+strings.ToUpper(want.Hash[2:]), e.alice)
		if r.status != 404 { // the path's "/v1/CHAINS/..." is no route
			t.Fatalf("uppercase path: %d", r.status)
		}
		r = e.do("GET", "/v1/chains/ETH/transactions/0x"+strings.ToUpper(want.Hash[2:]), e.alice)
		e.want(r, 200, 0)
		wantBody := `{"hash":"` + want.Hash + `","block_number":7,"block_hash":"` + want.BlockHash +
			`","block_time":"2023-11-14T22:14:44Z","index":2,"status":"failed","from":"` + addrA + `","to":"` + addrB +
			`","value":"1000000000000000000","fee":"21000000000000","nonce":7,"type":2,"gas_limit":60000,"gas_used":21000,` +
			`"effective_gas_price":"1000000000","method":"0xa9059cbb","contract_address":"",` +
			`"input":"0xa9059cbb00","cumulative_gas_used":63000,"revert_reason":"Panic(0x11): arithmetic underflow or overflow","confirmations":1,"finality":"safe","transfers":[` +
			`{"log_index":-1,"kind":"transaction","asset":"native","contract":"","token_id":"","symbol":"ETH","name":"","decimals":18,"from":"` + addrA + `","to":"` + addrB + `","amount":"1000000000000000000","call_type":"","call_path":"","error":""},` +
			`{"log_index":2,"kind":"token","asset":"erc20","contract":"` + addrC + `","token_id":"","symbol":"TKN","name":"","decimals":6,"from":"` + addrB + `","to":"` + addrC + `","amount":"5","call_type":"","call_path":"","error":""},` +
			`{"log_index":-2,"kind":"internal","asset":"native","contract":"","token_id":"","symbol":"ETH","name":"","decimals":18,"from":"` + addrB + `","to":"` + addrC + `","amount":"7","call_type":"CALL","call_path":"0.1","error":"execution reverted"},` +
			`{"log_index":3,"kind":"token","asset":"erc1155","contract":"` + addrC + `","token_id":"115792089237316195423570985008687907853269984665640564039457584007913129639935","symbol":"ITM","name":"Items \"\u003c1155\u003e\"","decimals":0,"from":"` + addrB + `","to":"` + addrA + `","amount":"4","call_type":"","call_path":"","error":""}]}` + "\n"
		if string(r.body) != wantBody {
			t.Fatalf("GET %s =\n%s\nwant\n%s", path, r.body, wantBody)
		}
		e.want(e.do("GET", "/v1/chains/ETH/transactions/0x"+strings.Repeat("ab", 32), e.alice), 404, 5)
		e.want(e.do("GET", path, e.bob), 404, 5)
	})
}

func TestBalances(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		err := e.db.PutBalances(ctx, []query.Balance{
			{Chain: "ETH", Address: addrA, Asset: query.AssetERC20, Contract: addrC, Symbol: "DEMO", Decimals: 6, Amount: query.MustParseAmount("123456789012345678901234567890"), Block: 9, Updated: at},
			{Chain: "ETH", Address: addrA, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Amount: query.MustParseAmount("1000000000000000001"), Block: 10, Updated: at},
			{Chain: "ETH", Address: addrA, Asset: query.AssetERC1155, Contract: query.HoldingKey(query.AssetERC1155, addrC, "77"), Symbol: "ITM",
				Name: "Items", Amount: query.AmountOf(3), Block: 9, Updated: at},
		})
		if err != nil {
			t.Fatal(err)
		}
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		r := e.do("GET", "/v1/chains/ETH/addresses/"+addrA+"/balances", e.alice)
		e.want(r, 200, 0)
		want := `{"balances":[` +
			`{"asset":"native","contract":"","token_id":"","symbol":"ETH","name":"","decimals":18,"amount":"1000000000000000001","block_number":10,"update_time":"2026-03-01T12:00:00Z"},` +
			`{"asset":"erc20","contract":"` + addrC + `","token_id":"","symbol":"DEMO","name":"","decimals":6,"amount":"123456789012345678901234567890","block_number":9,"update_time":"2026-03-01T12:00:00Z"},` +
			`{"asset":"erc1155","contract":"` + addrC + `","token_id":"77","symbol":"ITM","name":"Items","decimals":0,"amount":"3","block_number":9,"update_time":"2026-03-01T12:00:00Z"}]}` + "\n"
		if string(r.body) != want {
			t.Fatalf("balances =\n%s\nwant\n%s", r.body, want)
		}
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrB, e.alice), 200, 0)
		if r := e.do("GET", "/v1/chains/ETH/addresses/"+addrB+"/balances", e.alice); string(r.body) != `{"balances":[]}`+"\n" {
			t.Fatalf("no balances yet = %s", r.body)
		}
	})
}

func TestConcurrentPutDelete(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		path := "/v1/chains/ETH/addresses/" + addrA
		var wg sync.WaitGroup
		statuses := make([]int, 40)
		for i := range statuses {
			wg.Go(func() {
				method := "PUT"
				if i%2 == 1 {
					method = "DELETE"
				}
				req, _ := http.NewRequest(method, e.url+path, nil)
				req.SetBasicAuth(e.alice.id, e.alice.secret)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			})
		}
		wg.Wait()
		for i, s := range statuses {
			if s != 200 && !(i%2 == 1 && s == 404) {
				t.Fatalf("request %d answered %d", i, s)
			}
		}
		r := e.do("GET", "/v1/addresses", e.alice)
		m := r.json(t)
		n := int(m["total_size"].(float64))
		if n > 1 || len(m["addresses"].([]any)) != n {
			t.Fatalf("after the race: %s", r.body)
		}
		tracked, err := e.db.Tracked(context.Background(), "ETH")
		if err != nil || len(tracked) != n {
			t.Fatalf("tracked %v, %v; subscriptions %d", tracked, err, n)
		}
		// Whatever the final state, the API agrees with it.
		status := 200
		if n == 0 {
			status = 401
		}
		e.want(e.do("GET", path+"/balances", e.alice), status, 0)
	})
}

func TestDatabaseGoesAway(t *testing.T) {
	e := newEnv(t, testenv.Postgres(t))
	e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
	// The test cluster runs with synchronous_commit=off and stops with
	// -m immediate: without a checkpoint the last commits would be lost.
	if _, err := e.db.Bun().Exec("CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	testenv.StopPostgres(t)
	stopped := true
	defer func() {
		if stopped {
			testenv.StartPostgres(t)
		}
	}()
	for _, p := range []string{"/v1/addresses", "/v1/chains/ETH/addresses/" + addrA + "/balances"} {
		r := e.do("GET", p, e.alice)
		e.want(r, 503, 14)
		if strings.Contains(string(r.body), "pq:") || strings.Contains(string(r.body), "127.0.0.1") {
			t.Fatalf("503 body leaks the driver error: %s", r.body)
		}
	}
	if r := e.do("GET", "/healthz", key{}); r.status != 503 {
		t.Fatalf("/healthz with the database down: %d", r.status)
	}
	testenv.StartPostgres(t)
	stopped = false
	if r := e.do("GET", "/v1/addresses", e.alice); r.status != 200 {
		t.Fatalf("after restart: %d %s\n%s", r.status, r.body, e.logbuf)
	}
	if r := e.do("GET", "/healthz", key{}); r.status != 200 {
		t.Fatalf("/healthz after restart: %d", r.status)
	}
}

func TestInternalErrorIsLogged(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "addrd.db"))
	e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
	// Break the schema under the server: a missing table is no
	// unavailability, it is a bug, so the client sees "internal error".
	if _, err := e.db.Bun().Exec("DROP TABLE balances"); err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", "/v1/chains/ETH/addresses/"+addrA+"/balances", e.alice)
	e.want(r, 500, 13)
	if m := r.json(t); m["message"] != "internal error" {
		t.Fatalf("body %s", r.body)
	}
	id := r.header.Get("X-Request-Id")
	logs := e.logbuf.String()
	if id == "" || !strings.Contains(logs, `"request_id":"`+id+`"`) || !strings.Contains(logs, "balances") {
		t.Fatalf("request %q not logged in full:\n%s", id, logs)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "addrd.db"))
	if r := e.do("GET", "/healthz", key{}); r.status != 200 {
		t.Fatalf("/healthz: %d %s", r.status, r.body)
	}
	e.do("GET", "/v1/addresses", e.alice)
	r := e.do("GET", "/metrics", key{})
	if r.status != 200 || !strings.Contains(string(r.body), `addrd_http_requests_total{code="200",method="GET",route="/v1/addresses"} 1`) {
		t.Fatalf("/metrics: %d\n%s", r.status, r.body)
	}
}

func TestHandleBehindAuth(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "addrd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k, secret, _ := db.CreateAPIKey(context.Background(), "alice")
	s := api.New(api.Config{Store: db, Chains: []string{"ETH"}, Syntax: evmSyntax("ETH")})
	s.Handle("GET /constant", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), true)
	for _, c := range []struct {
		user, pass string
		status     int
	}{{"", "", 401}, {k.ID, "wrong", 401}, {k.ID, secret, 200}} {
		req := httptest.NewRequest("GET", "/constant", nil)
		if c.user != "" {
			req.SetBasicAuth(c.user, c.pass)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%q: %d, want %d", c.user, rec.Code, c.status)
		}
	}
}

// TestMaxInFlight checks that no more requests than MaxInFlight use the
// store at once: the others wait their turn.
func TestMaxInFlight(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "addrd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k, secret, _ := db.CreateAPIKey(context.Background(), "alice")
	const limit, requests = 2, 20
	s := api.New(api.Config{Store: db, Chains: []string{"ETH"}, Syntax: evmSyntax("ETH"), MaxInFlight: limit, TurnsPerKey: limit})
	var (
		mu       sync.Mutex
		cur, top int
	)
	entered := make(chan struct{})
	release := make(chan struct{})
	s.Handle("GET /hold", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur++
		top = max(top, cur)
		mu.Unlock()
		entered <- struct{}{}
		<-release
		mu.Lock()
		cur--
		mu.Unlock()
	}), true)
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			req := httptest.NewRequest("GET", "/hold", nil)
			req.SetBasicAuth(k.ID, secret)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Errorf("status %d", rec.Code)
			}
		})
	}
	for range limit {
		<-entered
	}
	for range requests - limit {
		release <- struct{}{}
		<-entered
	}
	for range limit {
		release <- struct{}{}
	}
	wg.Wait()
	if top != limit {
		t.Errorf("%d requests in the handler at once, want %d", top, limit)
	}
}

// cover marks addresses synced and backfilled from block 0, as the
// fetcher does once their history is stored: reads list what is stored
// from their history start on.
func (e *env) cover(addresses ...string) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.db.MarkSynced(ctx, "ETH", addresses, 0, 0); err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.StoreBackfill(ctx, "ETH", query.BackfillJob{Addresses: addresses, Low: 0, Next: 0}, nil, nil, -1); err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.BalancesStored(ctx, "ETH", addresses, 0); err != nil {
		e.t.Fatal(err)
	}
}

// TestSubscriptionResource: GET of a subscription gives its state and
// covered range; reads during SYNCING say so in their headers and list
// nothing stored before the covered range, even what another requester's
// subscription stored.
func TestSubscriptionResource(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		path := "/v1/chains/ETH/addresses/" + addrA
		r := e.do("GET", path, e.alice)
		e.want(r, 404, 5)
		// Bob tracks B; a transaction between A and B is stored at block 3.
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrB, e.bob), 200, 0)
		e.cover(addrB)
		if err := e.db.StoreBlock(ctx, "ETH", block(3), []query.Transaction{tx(3, 0, addrA, addrB)}, nil); err != nil {
			t.Fatal(err)
		}
		e.want(e.do("PUT", path, e.alice), 200, 0)
		for _, m := range []string{"GET", "PUT"} {
			r := e.do(m, path, e.alice)
			e.want(r, 200, 0)
			if got, want := string(r.body), `{"name":"chains/ETH/addresses/`+addrA+`","state":"SYNCING","history_start_block":null,"sync_problem":null}`+"\n"; got != want {
				t.Fatalf("%s while syncing: %s, want %s", m, got, want)
			}
		}
		r = e.do("GET", path+"/transactions", e.alice)
		e.want(r, 200, 0)
		if got := r.header.Get("Addrd-Subscription-State"); got != "SYNCING" {
			t.Fatalf("state header %q while syncing", got)
		}
		if got := r.header.Get("Addrd-History-Start-Block"); got != "" {
			t.Fatalf("history start header %q before the first sync", got)
		}
		if got := string(r.body); got != `{"transactions":[],"next_page_token":""}`+"\n" {
			t.Fatalf("transactions while syncing: %s; bob's tracking of B shows through", got)
		}
		byHash := "/v1/chains/ETH/transactions/" + tx(3, 0, addrA, addrB).Hash
		e.want(e.do("GET", byHash, e.alice), 404, 5)
		// Synced at block 5 with a backfill from 2 pending: covered from 6.
		if err := e.db.MarkSynced(ctx, "ETH", []string{addrA}, 5, 2); err != nil {
			t.Fatal(err)
		}
		r = e.do("GET", path, e.alice)
		if got, want := string(r.body), `{"name":"chains/ETH/addresses/`+addrA+`","state":"SYNCING","history_start_block":6,"sync_problem":null}`+"\n"; got != want {
			t.Fatalf("synced, backfilling: %s, want %s", got, want)
		}
		if err := e.db.StoreBackfill(ctx, "ETH", query.BackfillJob{Addresses: []string{addrA}, Low: 2, Next: 5}, nil, nil, 1); err != nil {
			t.Fatal(err)
		}
		r = e.do("GET", path, e.alice)
		if got, want := string(r.body), `{"name":"chains/ETH/addresses/`+addrA+`","state":"SYNCING","history_start_block":2,"sync_problem":null}`+"\n"; got != want {
			t.Fatalf("backfilled, balances not yet recorded stored: %s, want %s", got, want)
		}
		if err := e.db.BalancesStored(ctx, "ETH", []string{addrA}, 5); err != nil {
			t.Fatal(err)
		}
		r = e.do("GET", path, e.alice)
		if got, want := string(r.body), `{"name":"chains/ETH/addresses/`+addrA+`","state":"ACTIVE","history_start_block":2,"sync_problem":null}`+"\n"; got != want {
			t.Fatalf("backfilled: %s, want %s", got, want)
		}
		for _, read := range []string{"/transactions", "/balances", "/balance_changes"} {
			r = e.do("GET", path+read, e.alice)
			e.want(r, 200, 0)
			if r.header.Get("Addrd-Subscription-State") != "ACTIVE" || r.header.Get("Addrd-History-Start-Block") != "2" {
				t.Fatalf("%s headers %v", read, r.header)
			}
		}
		if m := e.do("GET", path+"/transactions", e.alice).json(t); len(m["transactions"].([]any)) != 1 {
			t.Fatalf("transactions once covered from 2: %v", m)
		}
		e.want(e.do("GET", byHash, e.alice), 200, 0)
		// Bob, not subscribed to A, gets no headers and the usual 401.
		r = e.do("GET", path+"/transactions", e.bob)
		e.want(r, 401, 16)
		if r.header.Get("Addrd-Subscription-State") != "" {
			t.Fatal("state header on a read of an address not subscribed")
		}
		e.want(e.do("GET", path+"?x=1", e.alice), 400, 3)
	})
}

// TestBalanceChanges: the statement is paged like transactions (newest
// first, page_size, page_token bound to its list and requester), and
// answers 401 code 16 when not subscribed.
func TestBalanceChanges(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		var rows []query.BalanceChange
		for n := 1; n <= 5; n++ {
			for _, contract := range []string{"", addrC} {
				rows = append(rows, query.BalanceChange{Chain: "ETH", Address: addrA, Contract: contract, Block: uint64(n),
					Time: time.Unix(int64(1_700_000_000+n*12), 0).UTC(), Amount: query.AmountOf(int64(-n)), BalanceAfter: query.AmountOf(int64(100 - n)),
					Causes:  []query.Cause{{Kind: query.KindFee, TxHash: fmt.Sprintf("0x%064x", n), Amount: query.AmountOf(int64(-n))}},
					Checked: true, Reconciled: true, Internals: true})
			}
		}
		rows[len(rows)-1].Reconciled, rows[len(rows)-1].Difference = false, query.AmountOf(-2)
		if err := e.db.PutStatement(ctx, "ETH", rows, nil, nil); err != nil {
			t.Fatal(err)
		}
		// Blocks 1 to 3 final, 4 safe, 5 latest.
		if err := e.db.StoreBlock(ctx, "ETH", block(5), nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := e.db.SetFinality(ctx, "ETH", query.Finality{Safe: 4, Finalized: 3, Source: query.FinalityByNode}); err != nil {
			t.Fatal(err)
		}
		path := "/v1/chains/ETH/addresses/" + addrA + "/balance_changes"
		r := e.do("GET", path, e.alice)
		e.want(r, 401, 16)
		if !strings.Contains(string(r.body), "requester is not subscribed for address '"+addrA+"'") {
			t.Errorf("not subscribed: %s", r.body)
		}
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)

		type page struct {
			BalanceChanges []struct {
				BlockNumber  uint64 `json:"block_number"`
				Contract     string
				Amount       string
				BalanceAfter string `json:"balance_after"`
				Reconciled   bool
				Difference   string
				Finality     string
				Causes       []struct{ Kind, Amount string }
			} `json:"balance_changes"`
			NextPageToken string `json:"next_page_token"`
		}
		var got []string
		tok := ""
		for range 10 {
			r := e.do("GET", path+"?page_size=3&page_token="+tok, e.alice)
			e.want(r, 200, 0)
			var p page
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatal(err)
			}
			for _, c := range p.BalanceChanges {
				got = append(got, fmt.Sprintf("%d%s:%s/%s/%v/%s/%s", c.BlockNumber, c.Contract, c.Amount, c.BalanceAfter, c.Reconciled, c.Difference, c.Finality))
			}
			if tok = p.NextPageToken; tok == "" {
				break
			}
		}
		want := []string{"5" + addrC + ":-5/95/false/-2/latest", "5:-5/95/true/0/latest", "4" + addrC + ":-4/96/true/0/safe", "4:-4/96/true/0/safe",
			"3" + addrC + ":-3/97/true/0/finalized"}
		if len(got) != 10 || !slices.Equal(got[:5], want) {
			t.Fatalf("statement pages = %v, want 10 rows newest first starting %v", got, want)
		}
		// A token of another list or requester is refused.
		r = e.do("GET", path+"?page_size=1", e.alice)
		var p page
		json.Unmarshal(r.body, &p)
		e.want(e.do("GET", "/v1/chains/ETH/addresses/"+addrA+"/transactions?page_token="+p.NextPageToken, e.alice), 400, 3)
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.bob), 200, 0)
		e.want(e.do("GET", path+"?page_token="+p.NextPageToken, e.bob), 400, 3)
		e.want(e.do("GET", path+"?page_size=-1", e.alice), 400, 3)
	})
}

// TestBalanceChangeFields: a row of an ERC-1155 id says its contract and
// token_id apart (stored under the holding key contract/id), and a
// withdrawal's cause its withdrawal and validator indexes, null on the
// other causes: written by hand as json.Marshal writes the types.
func TestBalanceChangeFields(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		at := time.Unix(1_700_000_000, 0).UTC()
		rows := []query.BalanceChange{
			{Chain: "ETH", Address: addrA, Block: 9, Time: at, Amount: query.AmountOf(1000000000), BalanceAfter: query.AmountOf(1000000000), Internals: true,
				Causes: []query.Cause{{Kind: query.KindWithdrawal, Amount: query.AmountOf(1000000000), Ref: query.WithdrawalRef(41, 7)}}},
			{Chain: "ETH", Address: addrA, Contract: query.HoldingKey(query.AssetERC1155, addrC, "5"), Block: 9, Time: at, Amount: query.AmountOf(-2),
				BalanceAfter: query.AmountOf(3), Checked: true, Reconciled: true, Internals: true,
				Causes: []query.Cause{{Kind: query.KindToken, TxHash: fmt.Sprintf("0x%064x", 9), Amount: query.AmountOf(-2)}}},
		}
		if err := e.db.PutStatement(ctx, "ETH", rows, nil, nil); err != nil {
			t.Fatal(err)
		}
		e.want(e.do("PUT", "/v1/chains/ETH/addresses/"+addrA, e.alice), 200, 0)
		r := e.do("GET", "/v1/chains/ETH/addresses/"+addrA+"/balance_changes", e.alice)
		e.want(r, 200, 0)
		want := `{"balance_changes":[` +
			`{"block_number":9,"time":"2023-11-14T22:13:20Z","contract":"` + addrC + `","token_id":"5","asset":"erc1155","symbol":"","decimals":0,"amount":"-2","balance_after":"3",` +
			`"causes":[{"kind":"token","transaction_hash":"` + fmt.Sprintf("0x%064x", 9) + `","amount":"-2","withdrawal_index":null,"validator_index":null}],` +
			`"reconciled":true,"difference":"0","traced":true,"finality":"latest"},` +
			`{"block_number":9,"time":"2023-11-14T22:13:20Z","contract":"","token_id":"","asset":"native","symbol":"","decimals":0,"amount":"1000000000","balance_after":"1000000000",` +
			`"causes":[{"kind":"withdrawal","transaction_hash":"","amount":"1000000000","withdrawal_index":41,"validator_index":7}],` +
			`"reconciled":null,"difference":"0","traced":true,"finality":"latest"}],"next_page_token":""}` + "\n"
		if string(r.body) != want {
			t.Fatalf("balance_changes =\n%s\nwant\n%s", r.body, want)
		}
	})
}

// chainReporter is a fixed api.ChainReporter: the chains' health as
// cmd/addrd reads it (query/fetch's TestFetchResubscribeBehind holds where
// a SyncProblem comes from).
type chainReporter map[string]api.ChainHealth

func (c chainReporter) ChainHealth(context.Context) (map[string]api.ChainHealth, error) {
	return c, nil
}

// TestSubscriptionSyncProblem: a SYNCING subscription says why it is not
// being synced, and since when; an ACTIVE one, or one of a chain with
// nothing holding it up, says nothing.
func TestSubscriptionSyncProblem(t *testing.T) {
	since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	reason := "fetching fails: fetching ETH: failing since 2026-11-26T12:00:00Z: connection refused"
	e := newEnvWith(t, testenv.SQLite(t), func(c *api.Config) {
		c.Health = chainReporter{"ETH": {SyncProblem: reason, SyncProblemSince: since}, "TST": {}}
	})
	for _, tt := range []struct {
		name, chain, want string
		sync              bool
	}{
		{"Held", "ETH", `{"name":"chains/ETH/addresses/` + addrA + `","state":"SYNCING","history_start_block":null,"sync_problem":{"reason":"` + reason + `","since":"2026-11-26T12:00:00Z"}}`, false},
		{"NothingHolds", "TST", `{"name":"chains/TST/addresses/` + addrA + `","state":"SYNCING","history_start_block":null,"sync_problem":null}`, false},
		{"Active", "ETH", `{"name":"chains/ETH/addresses/` + addrB + `","state":"ACTIVE","history_start_block":0,"sync_problem":null}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			address := addrA
			if tt.sync {
				address = addrB
			}
			path := "/v1/chains/" + tt.chain + "/addresses/" + address
			e.want(e.do("PUT", path, e.alice), 200, 0)
			if tt.sync {
				e.cover(address)
			}
			for _, m := range []string{"GET", "PUT"} {
				r := e.do(m, path, e.alice)
				e.want(r, 200, 0)
				if got := strings.TrimSuffix(string(r.body), "\n"); got != tt.want {
					t.Errorf("%s: %s\nwant %s", m, got, tt.want)
				}
			}
		})
	}
}
