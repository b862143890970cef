package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/chain"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/utxo"
)

// eachStore is a store without query.WalletStatementStore: the API reads
// a wallet's statement through it an address at a time.
type eachStore struct {
	query.Store
	query.WalletStore
}

// TestWalletStatementBatched: over random wallets (seeded, the seed
// printed on failure), a wallet's statement pages (both orders, random
// page sizes and ranges), its export and its balances as of a block read
// through the store's batched read (WalletBalanceChanges) answer byte for
// byte what the read of each address by itself answers.
func TestWalletStatementBatched(t *testing.T) {
	regtest, err := utxo.NetworkByName("bitcoin-regtest")
	if err != nil {
		t.Fatal(err)
	}
	syn := utxo.Syntax{Network: regtest}
	for _, d := range testenv.DBs() {
		t.Run(d.Name, func(t *testing.T) {
			for seed := uint64(1); seed <= 6; seed++ {
				ctx := context.Background()
				db, err := store.Open(ctx, d.DSN(t))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				k, secret, err := db.CreateAPIKey(ctx, "oracle")
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(seed, 37))
				head := seedRandomWallet(t, db, syn, k.AccountID, rng)
				serve := func(s query.Store) string {
					h := api.New(api.Config{Store: s, Chains: []string{"BTCREGTEST"}, Syntax: map[string]chain.Syntax{"BTCREGTEST": syn},
						Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: prometheus.NewRegistry()})
					srv := httptest.NewServer(h)
					t.Cleanup(srv.Close)
					return srv.URL
				}
				batched, each := serve(db), serve(eachStore{db, db})
				get := func(base, path string) (int, string) {
					req, _ := http.NewRequest("GET", base+path, nil)
					req.SetBasicAuth(k.ID, secret)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					body, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Fatal(err)
					}
					return resp.StatusCode, string(body)
				}
				same := func(path string) string {
					c1, b1 := get(batched, path)
					c2, b2 := get(each, path)
					if c1 != c2 || b1 != b2 {
						t.Fatalf("seed %d: %s: batched %d %s\neach %d %s", seed, path, c1, b1, c2, b2)
					}
					if c1 != 200 {
						t.Fatalf("seed %d: %s: %d %s", seed, path, c1, b1)
					}
					return b1
				}
				w := "/v1/chains/BTCREGTEST/wallets/oracle"
				for range 8 {
					r := ""
					if rng.IntN(2) == 0 {
						r += "&order_by=block_number"
					}
					if rng.IntN(2) == 0 {
						lo := rng.Uint64N(head + 1)
						r += fmt.Sprintf("&start_block=%d&end_block=%d", lo, lo+rng.Uint64N(head+1))
					}
					q := fmt.Sprintf("?page_size=%d", 1+rng.IntN(7)) + r
					path, pages := w+"/balance_changes"+q, 0
					for {
						body := same(path)
						pages++
						var p struct {
							NextPageToken string `json:"next_page_token"`
						}
						if err := json.Unmarshal([]byte(body), &p); err != nil {
							t.Fatalf("seed %d: %s: %v", seed, path, err)
						}
						if p.NextPageToken == "" {
							break
						}
						path = w + "/balance_changes" + q + "&page_token=" + p.NextPageToken
					}
					same(w + "/balance_changes:export?" + r)
					same(fmt.Sprintf("%s/balances?block_number=%d", w, rng.Uint64N(head+1)))
					if pages == 0 {
						t.Fatal("no page")
					}
				}
			}
		})
	}
}

// seedRandomWallet stores a wallet "oracle" of random addresses, some of
// them used, and blocks of random payments to and between them with
// their statement rows (some of a token, whose rows the wallet's
// statement leaves out); it returns the head's number.
func seedRandomWallet(t *testing.T, db *store.DB, syn utxo.Syntax, account int64, rng *rand.Rand) uint64 {
	t.Helper()
	ctx := context.Background()
	n := 2 + rng.IntN(30)
	derived := createWallet(t, db, syn, account, "oracle", n)
	used := derived[:1+rng.IntN(n)]
	balance := map[string]query.Amount{}
	heads := uint64(5 + rng.IntN(60))
	var blocks []query.BlockData
	for i := uint64(1); i <= heads; i++ {
		tm := time.Unix(1_700_000_000+int64(i)*600, 0)
		blk := query.Block{Number: i, Hash: fmt.Sprintf("%064x", 1<<40+i), ParentHash: fmt.Sprintf("%064x", 1<<40+i-1), Time: tm}
		bd := query.BlockData{Block: blk}
		causes := map[string][]query.Cause{}
		var order []string
		for j := range rng.IntN(4) {
			hash := fmt.Sprintf("%056x%08x", i, j)
			to := used[rng.IntN(len(used))]
			from := "bcrt1qpayer"
			v := int64(1000 + rng.IntN(100_000))
			tx := query.Transaction{Chain: "BTCREGTEST", Hash: hash, BlockNumber: i, BlockHash: blk.Hash, BlockTime: tm, Index: uint(j + 1),
				Status: query.StatusSuccess, To: to, Value: query.AmountOf(v), Fee: query.AmountOf(141)}
			add := func(a string, c query.Cause) {
				if causes[a] == nil {
					order = append(order, a)
				}
				causes[a] = append(causes[a], c)
			}
			if rng.IntN(3) == 0 { // spent by one of the wallet's own addresses
				from = used[rng.IntN(len(used))]
				add(from, query.Cause{Kind: query.KindSpent, TxHash: hash, Amount: query.AmountOf(-v - 141)})
				add(from, query.Cause{Kind: query.KindFee, TxHash: hash, Amount: query.AmountOf(-141)})
			}
			tx.From = from
			add(to, query.Cause{Kind: query.KindTransaction, TxHash: hash, Amount: query.AmountOf(v)})
			bd.Txs = append(bd.Txs, tx)
		}
		for _, a := range order {
			var sum query.Amount
			for _, c := range causes[a] {
				if c.Kind != query.KindFee {
					sum = sum.Add(c.Amount)
				}
			}
			balance[a] = balance[a].Add(sum)
			bd.Changes = append(bd.Changes, query.BalanceChange{Chain: "BTCREGTEST", Address: a, Block: i, Time: tm, Amount: sum,
				BalanceAfter: balance[a], Causes: causes[a], Checked: rng.IntN(5) > 0, Reconciled: rng.IntN(4) > 0,
				Difference: query.AmountOf(int64(rng.IntN(2))), Internals: true})
			if rng.IntN(4) == 0 {
				bd.Changes = append(bd.Changes, query.BalanceChange{Chain: "BTCREGTEST", Address: a, Contract: "tok", Block: i, Time: tm,
					Amount: query.AmountOf(7), BalanceAfter: query.AmountOf(7), Checked: true, Reconciled: true, Internals: true})
			}
		}
		blocks = append(blocks, bd)
	}
	if err := db.StoreBlocks(ctx, "BTCREGTEST", blocks); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkSynced(ctx, "BTCREGTEST", derived, 0, 0); err != nil {
		t.Fatal(err)
	}
	return heads
}

// createWallet creates, for account, the BTCREGTEST wallet id of the
// regtest tpub's receive branch with its first n addresses derived and
// used, and returns them.
func createWallet(tb testing.TB, db *store.DB, syn utxo.Syntax, account int64, id string, n int) []string {
	tb.Helper()
	desc, err := syn.ParseDescriptor("wpkh(" + regtestTpub + "/0/*)")
	if err != nil {
		tb.Fatal(err)
	}
	derived, err := syn.Derive(desc, 0, uint32(n))
	if err != nil {
		tb.Fatal(err)
	}
	wl := query.Wallet{Chain: "BTCREGTEST", ID: id, GapLimit: 20,
		Descriptors: []query.WalletDescriptor{{Descriptor: desc, Derived: uint32(n), Used: int64(n - 1)}}}
	was := make([]query.WalletAddress, n)
	for k := range was {
		was[k] = query.WalletAddress{Address: derived[k], Index: uint32(k)}
	}
	if _, err := db.CreateWallet(context.Background(), account, wl, was); err != nil {
		tb.Fatal(err)
	}
	return derived
}
