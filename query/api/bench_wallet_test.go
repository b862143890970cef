package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
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

// BenchmarkWalletStatement times a descriptor wallet's reads through the
// API on PostgreSQL and SQLite: a wallet of 1,000 used addresses, 10
// transactions each, one a block (10,000 statement rows), written through
// the store's own write path (StoreBlocks). It reads the wallet's
// statement (its first page and a page in the middle through its
// token), its export and its transactions, and the same reads of one of
// its addresses as the reference, and logs the milliseconds and the
// store calls of each (the median of WHARF_BENCH_ROUNDS runs, 3; a
// batched read of the statements of 500 addresses counts one).
func BenchmarkWalletStatement(b *testing.B) {
	const addrs, perAddr = 1000, 10
	rounds := benchRounds(b)
	for _, d := range testenv.DBs() {
		b.Run(d.Name, func(b *testing.B) {
			db, key, secret := benchStore(b, d.DSN(b))
			regtest, err := utxo.NetworkByName("bitcoin-regtest")
			if err != nil {
				b.Fatal(err)
			}
			syn := utxo.Syntax{Network: regtest}
			start := time.Now()
			wallet, addresses := seedWallet(b, db, syn, key.AccountID, addrs, perAddr)
			b.Logf("seeded a wallet of %d addresses, %d statement rows, in %v", addrs, addrs*perAddr, time.Since(start).Round(time.Millisecond))
			cs := &walletCallStore{DB: db}
			serve := func(st query.Store) string {
				h := api.New(api.Config{Store: st, Chains: []string{"BTCREGTEST"}, Syntax: map[string]chain.Syntax{"BTCREGTEST": syn},
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: prometheus.NewRegistry(), MaxInFlight: db.Readers()})
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				srv := &http.Server{Handler: h}
				go srv.Serve(ln)
				b.Cleanup(func() { srv.Close() })
				return "http://" + ln.Addr().String()
			}
			// The API over the store as it is, and over it without its
			// batched read of many addresses' statements: a read of each.
			variants := []struct{ name, base string }{{"batched", serve(cs)}, {"each", serve(eachStore{cs, cs})}}
			base := variants[0].base
			get := func(base, path string) ([]byte, time.Duration, int64) {
				b.Helper()
				req, _ := http.NewRequest("GET", base+path, nil)
				req.SetBasicAuth(key.ID, secret)
				n0 := cs.n.Load()
				t0 := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(t0)
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%s: %d %s %v", path, resp.StatusCode, body, err)
				}
				return body, took, cs.n.Load() - n0
			}
			w := "/v1/chains/BTCREGTEST/wallets/" + wallet
			one := "/v1/chains/BTCREGTEST/addresses/" + addresses[0]
			first, _, _ := get(base, w+"/balance_changes?page_size=100")
			// The token of the page in the middle: after 5,000 rows.
			middle := w + "/balance_changes?page_size=100"
			for range 50 {
				body, _, _ := get(base, middle)
				tok := pageToken(b, body)
				middle = w + "/balance_changes?page_size=100&page_token=" + tok
			}
			if len(first) == 0 {
				b.Fatal("empty first page")
			}
			reads := []benchRead{
				{"wallet statement, first page", w + "/balance_changes?page_size=100"},
				{"wallet statement, middle page", middle},
				{"wallet export", w + "/balance_changes:export"},
				{"wallet transactions", w + "/transactions"},
				{"address statement, first page", one + "/balance_changes?page_size=100"},
				{"address export", one + "/balance_changes:export"},
				{"address transactions", one + "/transactions"},
			}
			b.ResetTimer()
			for _, rd := range reads {
				ds := make([][]time.Duration, len(variants))
				calls := make([]int64, len(variants))
				for range rounds { // the variants interleaved
					for i, v := range variants {
						_, took, n := get(v.base, rd.path)
						ds[i] = append(ds[i], took)
						calls[i] = n
					}
				}
				for i, v := range variants {
					slices.Sort(ds[i])
					ms := float64(ds[i][len(ds[i])/2]) / float64(time.Millisecond)
					b.Logf("%-30s %-8s %9.1f ms %6d store calls", rd.name, v.name, ms, calls[i])
					b.ReportMetric(ms, v.name+"-"+strings.ReplaceAll(strings.ReplaceAll(rd.name, ", ", "-"), " ", "-")+"-ms")
				}
			}
		})
	}
}

// pageToken is the next_page_token of a page.
func pageToken(b *testing.B, body []byte) string {
	b.Helper()
	var p struct {
		NextPageToken string `json:"next_page_token"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.NextPageToken == "" {
		b.Fatalf("no next page: %v %.200s", err, body)
	}
	return p.NextPageToken
}

// seedWallet stores a wallet of addrs addresses for account and perAddr
// transactions paying each, one a block, each with its statement row, as
// the fetcher stores them; it returns the wallet's name and addresses.
func seedWallet(b *testing.B, db *store.DB, syn utxo.Syntax, account int64, addrs, perAddr int) (string, []string) {
	b.Helper()
	ctx := context.Background()
	derived := createWallet(b, db, syn, account, "bench", addrs)
	var blocks []query.BlockData
	balance := make([]int64, addrs)
	flush := func() {
		if err := db.StoreBlocks(ctx, "BTCREGTEST", blocks); err != nil {
			b.Fatal(err)
		}
		blocks = blocks[:0]
	}
	for i := 1; i <= addrs*perAddr; i++ {
		k := i % addrs
		to := derived[k]
		hash := fmt.Sprintf("%064x", i)
		t := time.Unix(1_700_000_000+int64(i)*600, 0)
		v := int64(100_000 + i)
		balance[k] += v
		blk := query.Block{Number: uint64(i), Hash: fmt.Sprintf("%064x", 1<<40+i), ParentHash: fmt.Sprintf("%064x", 1<<40+i-1), Time: t}
		tx := query.Transaction{Chain: "BTCREGTEST", Hash: hash, BlockNumber: blk.Number, BlockHash: blk.Hash, BlockTime: t, Index: 1,
			Status: query.StatusSuccess, From: "bcrt1qpayer", To: to, Value: query.AmountOf(v), Fee: query.AmountOf(141)}
		ch := query.BalanceChange{Chain: "BTCREGTEST", Address: to, Block: blk.Number, Time: t, Amount: query.AmountOf(v), BalanceAfter: query.AmountOf(balance[k]),
			Causes:  []query.Cause{{Kind: query.KindTransaction, TxHash: hash, Amount: query.AmountOf(v)}},
			Checked: true, Reconciled: true, Internals: true}
		blocks = append(blocks, query.BlockData{Block: blk, Txs: []query.Transaction{tx}, Changes: []query.BalanceChange{ch}})
		if len(blocks) == 500 {
			flush()
		}
	}
	if len(blocks) > 0 {
		flush()
	}
	// Synced from the chain's start on: the history is covered.
	if err := db.MarkSynced(ctx, "BTCREGTEST", derived, 0, 0); err != nil {
		b.Fatal(err)
	}
	return "bench", derived
}

// walletCallStore counts the store reads the API makes.
type walletCallStore struct {
	*store.DB
	n atomic.Int64
}

func (s *walletCallStore) Authenticate(ctx context.Context, id, secret string) (query.Account, error) {
	s.n.Add(1)
	return s.DB.Authenticate(ctx, id, secret)
}

func (s *walletCallStore) Subscribed(ctx context.Context, account int64, chain string, addresses ...string) (bool, error) {
	s.n.Add(1)
	return s.DB.Subscribed(ctx, account, chain, addresses...)
}

func (s *walletCallStore) Subscription(ctx context.Context, account int64, chain, address string) (query.Subscription, error) {
	s.n.Add(1)
	return s.DB.Subscription(ctx, account, chain, address)
}

func (s *walletCallStore) AccountBalances(ctx context.Context, account int64, chain, address string) ([]query.Balance, error) {
	s.n.Add(1)
	return s.DB.AccountBalances(ctx, account, chain, address)
}

func (s *walletCallStore) AccountTransactions(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int) ([]query.Transaction, error) {
	s.n.Add(1)
	return s.DB.AccountTransactions(ctx, account, chain, address, after, limit)
}

func (s *walletCallStore) AccountBalanceChanges(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int) ([]query.BalanceChange, error) {
	s.n.Add(1)
	return s.DB.AccountBalanceChanges(ctx, account, chain, address, after, limit)
}

func (s *walletCallStore) SubscriptionBalances(ctx context.Context, account int64, chain, address string) (query.Subscription, []query.Balance, error) {
	s.n.Add(1)
	return s.DB.SubscriptionBalances(ctx, account, chain, address)
}

func (s *walletCallStore) SubscriptionTransactions(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int) (query.Subscription, []query.Transaction, error) {
	s.n.Add(1)
	return s.DB.SubscriptionTransactions(ctx, account, chain, address, after, limit)
}

func (s *walletCallStore) SubscriptionBalanceChanges(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int) (query.Subscription, []query.BalanceChange, error) {
	s.n.Add(1)
	return s.DB.SubscriptionBalanceChanges(ctx, account, chain, address, after, limit)
}

func (s *walletCallStore) SubscriptionTransactionsFunc(ctx context.Context, account int64, chain, address string, after *query.TxCursor, limit int, fn func(*query.Transaction, bool) error) (query.Subscription, error) {
	s.n.Add(1)
	return s.DB.SubscriptionTransactionsFunc(ctx, account, chain, address, after, limit, fn)
}

func (s *walletCallStore) SubscriptionBalanceChangesFunc(ctx context.Context, account int64, chain, address string, after *query.ChangeCursor, limit int, fn func(*query.BalanceChange) error) (query.Subscription, error) {
	s.n.Add(1)
	return s.DB.SubscriptionBalanceChangesFunc(ctx, account, chain, address, after, limit, fn)
}

func (s *walletCallStore) SubscriptionChangeRange(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int) (query.Subscription, query.ChangeRange, error) {
	s.n.Add(1)
	return s.DB.SubscriptionChangeRange(ctx, account, chain, address, r, after, limit, budget)
}

func (s *walletCallStore) SubscriptionChangeRangeFunc(ctx context.Context, account int64, chain, address string, r query.Range, after *query.ChangeCursor, limit, budget int, fn func(*query.BalanceChange, query.Label) error) (query.Subscription, *query.ChangeCursor, error) {
	s.n.Add(1)
	return s.DB.SubscriptionChangeRangeFunc(ctx, account, chain, address, r, after, limit, budget, fn)
}

func (s *walletCallStore) SubscriptionTxRange(ctx context.Context, account int64, chain, address string, r query.Range, after *query.TxCursor, limit, budget int) (query.Subscription, query.TxRange, error) {
	s.n.Add(1)
	return s.DB.SubscriptionTxRange(ctx, account, chain, address, r, after, limit, budget)
}

func (s *walletCallStore) SubscriptionBalancesAt(ctx context.Context, account int64, chain, address string, block uint64, at time.Time) (query.Subscription, []query.AsOf, query.Block, error) {
	s.n.Add(1)
	return s.DB.SubscriptionBalancesAt(ctx, account, chain, address, block, at)
}

func (s *walletCallStore) Head(ctx context.Context, chain string) (query.Block, bool, error) {
	s.n.Add(1)
	return s.DB.Head(ctx, chain)
}

func (s *walletCallStore) Secret(ctx context.Context, name string) ([]byte, error) {
	s.n.Add(1)
	return s.DB.Secret(ctx, name)
}

func (s *walletCallStore) Wallet(ctx context.Context, account int64, chain, id string) (query.Wallet, []query.WalletAddress, error) {
	s.n.Add(1)
	return s.DB.Wallet(ctx, account, chain, id)
}

// WalletBalanceChanges counts a query a batch of 500 addresses, as the
// store reads them.
func (s *walletCallStore) WalletBalanceChanges(ctx context.Context, account int64, chain string, addresses []string, from, to uint64, limit int, fn func(*query.BalanceChange) error) error {
	s.n.Add(int64(max(1, (len(addresses)+499)/500)))
	return s.DB.WalletBalanceChanges(ctx, account, chain, addresses, from, to, limit, fn)
}
