package fetch_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	seam "github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// TestEndAtFinalityDevChain: on the dev chain, which finalizes every
// 32nd block, the statement, the transactions and the export asked with
// end_block=finalized (and safe) end at the marks the fetcher stored
// from the node's tags, as the chain grows past two of them.
func TestEndAtFinalityDevChain(t *testing.T) {
	e := newEnv(t, testenv.SQLite(t), fetch.Config{})
	ctx := context.Background()
	d := e.dev
	watched := []string{addr(d.Accounts[0]), addr(d.Accounts[1])}
	for _, a := range d.Accounts[:2] {
		e.subscribe(a)
	}
	e.catchUp()
	seen := map[uint64]bool{}
	for i := range 70 {
		e.must(d.Transfer(ctx, i%3, d.Accounts[(i+1)%2], big.NewInt(int64(1000+i))))
		d.Commit()
		if i%10 == 9 {
			e.catchUp()
			fin := checkEndAtFinality(t, e.db, watched)
			seen[fin.Finalized] = true
			t.Logf("after %d blocks of transfers: finalized %d, safe %d", i+1, fin.Finalized, fin.Safe)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("the finalized mark was at %v only: want it to move during the run", seen)
	}
}

// checkEndAtFinality reads, through addrd's API over db, the statement,
// transactions and export of each watched address (alice's) with
// end_block=finalized and end_block=safe, and checks that each ends at
// the stored mark: the rows are the stored rows at or under it, every
// one says finalized (at least safe), and Addrd-End-Block names it. It
// returns the marks.
func checkEndAtFinality(t *testing.T, db *store.DB, watched []string) query.Finality {
	t.Helper()
	ctx := context.Background()
	key, secret, err := db.CreateAPIKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Config{Store: db, Chains: []string{chain}, Syntax: map[string]seam.Syntax{chain: evm.Syntax{}},
		Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.SetBasicAuth(key.ID, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return resp, b
	}
	fin, err := db.Finality(ctx, chain)
	if err != nil || fin.Source == "" {
		t.Fatalf("no finality stored (%+v, %v)", fin, err)
	}
	for _, a := range watched {
		all, err := db.AccountBalanceChanges(ctx, key.AccountID, chain, a, nil, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		txs, err := db.Transactions(ctx, chain, a, nil, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []struct {
			mark string
			end  uint64
		}{{query.FinalityFinalized, fin.Finalized}, {query.FinalitySafe, fin.Safe}} {
			base := "/v1/chains/" + chain + "/addresses/" + a
			var want []string
			for _, c := range all {
				if c.Block <= m.end {
					want = append(want, fmt.Sprintf("%d/%s", c.Block, c.Contract))
				}
			}
			slices.Sort(want)
			var got []string
			tok := ""
			for page := 0; ; page++ {
				resp, body := get(base + "/balance_changes?order_by=block_number&page_size=7&end_block=" + m.mark + "&page_token=" + url.QueryEscape(tok))
				if h := resp.Header.Get("Addrd-End-Block"); h != strconv.FormatUint(m.end, 10) {
					t.Fatalf("%s end_block=%s page %d: Addrd-End-Block %q, want %d", a, m.mark, page, h, m.end)
				}
				var p struct {
					Rows []struct {
						Block    uint64 `json:"block_number"`
						Contract string
						TokenID  string `json:"token_id"`
						Finality string
					} `json:"balance_changes"`
					Next string `json:"next_page_token"`
				}
				if err := json.Unmarshal(body, &p); err != nil {
					t.Fatal(err)
				}
				for _, r := range p.Rows {
					if r.Finality != query.FinalityFinalized && (m.mark == query.FinalityFinalized || r.Finality != query.FinalitySafe) {
						t.Fatalf("%s end_block=%s: a row of block %d says %s", a, m.mark, r.Block, r.Finality)
					}
					holding := r.Contract
					if r.TokenID != "" {
						holding = query.HoldingKey(query.AssetERC1155, r.Contract, r.TokenID)
					}
					got = append(got, fmt.Sprintf("%d/%s", r.Block, holding))
				}
				if tok = p.Next; tok == "" {
					break
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s end_block=%s (block %d): rows %v, want the stored rows at or under it %v", a, m.mark, m.end, got, want)
			}
			resp, body := get(base + "/balance_changes:export?end_block=" + m.mark)
			records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(records)-1 != len(want) || resp.Header.Get("Addrd-End-Block") != strconv.FormatUint(m.end, 10) {
				t.Fatalf("%s export end_block=%s: %d records, Addrd-End-Block %q; want %d, %d", a, m.mark, len(records)-1,
					resp.Header.Get("Addrd-End-Block"), len(want), m.end)
			}
			wantTxs := 0
			for _, tx := range txs {
				if tx.BlockNumber <= m.end {
					wantTxs++
				}
			}
			_, body = get(base + "/transactions?page_size=1000&end_block=" + m.mark)
			var p struct {
				Txs []struct {
					Block uint64 `json:"block_number"`
				} `json:"transactions"`
			}
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Txs) != wantTxs || len(p.Txs) > 0 && p.Txs[0].Block > m.end {
				t.Fatalf("%s transactions end_block=%s (block %d): %d, want %d", a, m.mark, m.end, len(p.Txs), wantTxs)
			}
		}
	}
	return fin
}
