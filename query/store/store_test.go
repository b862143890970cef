package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// dialects runs f once on a fresh SQLite file and once on a fresh
// PostgreSQL database.
func dialects(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Helper()
	for _, d := range testenv.DBs() {
		t.Run(d.Name, func(t *testing.T) { f(t, d.DSN(t)) })
	}
}

func open(t *testing.T, dsn string, opts ...store.Option) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// each runs f on a fresh store of each dialect.
func each(t *testing.T, f func(t *testing.T, db *store.DB, clk *testenv.Clock)) {
	t.Helper()
	dialects(t, func(t *testing.T, dsn string) {
		clk := testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		f(t, open(t, dsn, store.WithNow(clk.Now)), clk)
	})
}

func TestMigrate(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db, err := store.OpenNoMigrate(dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		applied, err := db.Migrate(ctx)
		if err != nil {
			t.Fatalf("first Migrate: %v", err)
		}
		if len(applied) == 0 || applied[0].Version != 1 {
			t.Fatalf("first Migrate applied %v, want 0001 first", applied)
		}
		again, err := db.Migrate(ctx)
		if err != nil || len(again) != 0 {
			t.Fatalf("second Migrate = %v, %v; want nothing applied", again, err)
		}
		// Open applies nothing more either.
		open(t, dsn)
	})
}

func TestMigrateConcurrent(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				db, err := store.Open(context.Background(), dsn)
				if err == nil {
					db.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		key, secret, err := db.CreateAPIKey(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		key2, secret2, err := db.CreateAPIKey(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if key2.AccountID != key.AccountID || key2.ID == key.ID || secret2 == secret {
			t.Fatalf("second key of one account: %+v vs %+v", key2, key)
		}
		acct, err := db.Authenticate(ctx, key.ID, secret)
		if err != nil || acct.ID != key.AccountID || acct.Name != "alice" {
			t.Fatalf("Authenticate = %+v, %v", acct, err)
		}
		for _, c := range []struct{ name, id, secret string }{
			{"WrongSecret", key.ID, secret2},
			{"EmptySecret", key.ID, ""},
			{"UnknownID", "ak000", secret},
			{"SQLInID", "' OR 1=1 --", secret},
		} {
			t.Run(c.name, func(t *testing.T) {
				if _, err := db.Authenticate(ctx, c.id, c.secret); !errors.Is(err, query.ErrUnauthenticated) {
					t.Fatalf("Authenticate = %v, want ErrUnauthenticated", err)
				}
			})
		}

		keys, err := db.ListAPIKeys(ctx)
		if err != nil || len(keys) != 2 {
			t.Fatalf("ListAPIKeys = %v, %v", keys, err)
		}
		if got := lastUsed(keys, key.ID); !got.Equal(clk.Now()) {
			t.Errorf("LastUsed = %v, want %v", got, clk.Now())
		}
		// Within a minute the stamp is not rewritten; after, it is.
		clk.Advance(30 * time.Second)
		db.Authenticate(ctx, key.ID, secret)
		keys, _ = db.ListAPIKeys(ctx)
		if got, want := lastUsed(keys, key.ID), clk.Now().Add(-30*time.Second); !got.Equal(want) {
			t.Errorf("LastUsed after 30s = %v, want %v (unchanged)", got, want)
		}
		clk.Advance(time.Minute)
		db.Authenticate(ctx, key.ID, secret)
		keys, _ = db.ListAPIKeys(ctx)
		if got := lastUsed(keys, key.ID); !got.Equal(clk.Now()) {
			t.Errorf("LastUsed after 90s = %v, want %v", got, clk.Now())
		}

		if err := db.RevokeAPIKey(ctx, key.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Authenticate(ctx, key.ID, secret); !errors.Is(err, query.ErrUnauthenticated) {
			t.Fatalf("Authenticate after revoke = %v", err)
		}
		if _, err := db.Authenticate(ctx, key2.ID, secret2); err != nil {
			t.Fatalf("the other key: %v", err)
		}
		for _, id := range []string{key.ID, "nope"} {
			if err := db.RevokeAPIKey(ctx, id); !errors.Is(err, query.ErrNotFound) {
				t.Errorf("RevokeAPIKey(%q) = %v, want ErrNotFound", id, err)
			}
		}
	})
}

func lastUsed(keys []query.APIKey, id string) time.Time {
	for _, k := range keys {
		if k.ID == id {
			return k.LastUsed
		}
	}
	return time.Time{}
}

const (
	addrA = "0x00000000000000000000000000000000000000aa"
	addrB = "0x00000000000000000000000000000000000000bb"
	addrC = "0x00000000000000000000000000000000000000cc"
)

func TestSubscriptions(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		k1, _, _ := db.CreateAPIKey(ctx, "one")
		k2, _, _ := db.CreateAPIKey(ctx, "two")
		for _, s := range []struct {
			chain, addr string
			created     bool
		}{
			{"ETH", addrB, true}, {"ETH", addrA, true}, {"ETH", addrA, false}, {"TST", addrA, true},
		} {
			created, err := db.Subscribe(ctx, k1.AccountID, s.chain, s.addr)
			if err != nil || created != s.created {
				t.Fatalf("Subscribe(%s %s) = %v, %v; want %v", s.chain, s.addr, created, err, s.created)
			}
		}
		subs, total, err := db.Subscriptions(ctx, k1.AccountID, "", nil, 2)
		if err != nil || total != 3 || len(subs) != 2 || subs[0].Name() != "chains/ETH/addresses/"+addrA || subs[1].Address != addrB {
			t.Fatalf("first page = %v, %d, %v", subs, total, err)
		}
		subs, total, err = db.Subscriptions(ctx, k1.AccountID, "", &query.SubscriptionCursor{Chain: "ETH", Address: addrB}, 2)
		if err != nil || total != 3 || len(subs) != 1 || subs[0].Chain != "TST" {
			t.Fatalf("second page = %v, %d, %v", subs, total, err)
		}
		subs, total, err = db.Subscriptions(ctx, k1.AccountID, "TST", nil, 10)
		if err != nil || total != 1 || len(subs) != 1 {
			t.Fatalf("TST = %v, %d, %v", subs, total, err)
		}
		if subs, total, err := db.Subscriptions(ctx, k2.AccountID, "", nil, 10); err != nil || total != 0 || len(subs) != 0 {
			t.Fatalf("other account = %v, %d, %v", subs, total, err)
		}

		if ok, err := db.Subscribed(ctx, k1.AccountID, "ETH", addrC, addrA); !ok || err != nil {
			t.Errorf("Subscribed(C, A) = %v, %v", ok, err)
		}
		if ok, err := db.Subscribed(ctx, k2.AccountID, "ETH", addrA); ok || err != nil {
			t.Errorf("other account Subscribed = %v, %v", ok, err)
		}
		if err := db.Unsubscribe(ctx, k2.AccountID, "ETH", addrA); !errors.Is(err, query.ErrNotFound) {
			t.Errorf("Unsubscribe not subscribed = %v", err)
		}
		if err := db.Unsubscribe(ctx, k1.AccountID, "ETH", addrC); !errors.Is(err, query.ErrNotFound) {
			t.Errorf("Unsubscribe never tracked = %v", err)
		}
		if err := db.Unsubscribe(ctx, k1.AccountID, "ETH", addrA); err != nil {
			t.Fatal(err)
		}
		if ok, _ := db.Subscribed(ctx, k1.AccountID, "ETH", addrA); ok {
			t.Error("still subscribed after Unsubscribe")
		}
	})
}

func TestTracked(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		k1, _, _ := db.CreateAPIKey(ctx, "one")
		k2, _, _ := db.CreateAPIKey(ctx, "two")
		tracked := func() []query.Tracked {
			t.Helper()
			tr, err := db.Tracked(ctx, "ETH")
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}
		db.Subscribe(ctx, k1.AccountID, "ETH", addrA)
		db.Subscribe(ctx, k2.AccountID, "ETH", addrA)
		db.Subscribe(ctx, k1.AccountID, "ETH", addrB)
		db.Subscribe(ctx, k1.AccountID, "TST", addrC)
		want := []query.Tracked{{Address: addrA, NeedsSync: true}, {Address: addrB, NeedsSync: true}}
		if got := tracked(); !slices.Equal(got, want) {
			t.Fatalf("Tracked = %v, want %v", got, want)
		}
		if err := db.MarkSynced(ctx, "ETH", []string{addrA, addrB}, 10, 11); err != nil {
			t.Fatal(err)
		}
		if err := db.StoreBlock(ctx, "ETH", query.Block{Number: 20, Hash: "0x20"}, nil, nil); err != nil {
			t.Fatal(err)
		}
		// One subscriber of A leaves: A stays tracked.
		db.Unsubscribe(ctx, k1.AccountID, "ETH", addrA)
		// Synced at 10 with nothing to backfill (low 11): their history
		// starts at 11.
		want = []query.Tracked{{Address: addrA, Covered: true, Backfilled: true, HistoryLow: 11}, {Address: addrB, Covered: true, Backfilled: true, HistoryLow: 11}}
		if got := tracked(); !slices.Equal(got, want) {
			t.Fatalf("after one of two left: %v, want %v", got, want)
		}
		// The last leaves at checkpoint 20; resubscribing asks for blocks from 20.
		db.Unsubscribe(ctx, k2.AccountID, "ETH", addrA)
		if got := tracked(); !slices.Equal(got, []query.Tracked{{Address: addrB, Covered: true, Backfilled: true, HistoryLow: 11}}) {
			t.Fatalf("after the last left: %v", got)
		}
		db.StoreBlock(ctx, "ETH", query.Block{Number: 30, Hash: "0x30", ParentHash: "0x20"}, nil, nil)
		db.Subscribe(ctx, k2.AccountID, "ETH", addrA)
		// The synced first, then those owed a sync (TestSyncOrder).
		want = []query.Tracked{{Address: addrB, Covered: true, Backfilled: true, HistoryLow: 11}, {Address: addrA, NeedsSync: true, SyncFrom: 20, Covered: true}}
		if got := tracked(); !slices.Equal(got, want) {
			t.Fatalf("resubscribed: %v, want %v", got, want)
		}
		// Leaving again before the fetcher synced keeps sync_from 20.
		db.Unsubscribe(ctx, k2.AccountID, "ETH", addrA)
		db.Subscribe(ctx, k1.AccountID, "ETH", addrA)
		if got := tracked(); !slices.Equal(got, want) {
			t.Fatalf("left and came back unsynced: %v, want %v", got, want)
		}
	})
}

// tx builds a transaction at block n, index i, from one address to another,
// with an ERC-20 transfer.
func tx(n uint64, i uint, from, to string) query.Transaction {
	return query.Transaction{
		Chain: "ETH", Hash: fmt.Sprintf("0x%062x%02x", n, i), BlockNumber: n, BlockHash: fmt.Sprintf("0xb%d", n),
		BlockTime: time.Unix(int64(1_700_000_000+n*12), 0).UTC(), Index: i, Status: query.StatusSuccess,
		From: from, To: to, Value: query.MustParseAmount("1000000000000000000"), Fee: query.AmountOf(21000000000000),
		Detail: evm.TxDetail{Nonce: n}.JSON(),
		Transfers: []query.Transfer{
			{Position: -1, Asset: query.AssetNative, From: from, To: to, Amount: query.MustParseAmount("1000000000000000000")},
			{Position: int(i), Asset: query.AssetERC20, Contract: addrC, From: to, To: from,
				Amount: query.MustParseAmount("115792089237316195423570985008687907853269984665640564039457584007913129639935")},
		},
	}
}

func block(n uint64) query.Block {
	return query.Block{Number: n, Hash: fmt.Sprintf("0xb%d", n), ParentHash: fmt.Sprintf("0xb%d", n-1),
		Time: time.Unix(int64(1_700_000_000+n*12), 0).UTC()}
}

func TestStoreBlock(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		if _, ok, err := db.Checkpoint(ctx, "ETH"); ok || err != nil {
			t.Fatalf("empty Checkpoint = %v, %v", ok, err)
		}
		for n := uint64(1); n <= 5; n++ {
			txs := []query.Transaction{tx(n, 0, addrA, addrB), tx(n, 3, addrB, addrA)}
			for range 2 { // storing a block twice duplicates nothing
				if err := db.StoreBlock(ctx, "ETH", block(n), txs, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		cp, ok, err := db.Checkpoint(ctx, "ETH")
		if err != nil || !ok || cp != block(5) {
			t.Fatalf("Checkpoint = %+v, %v, %v; want %+v", cp, ok, err, block(5))
		}
		if b, err := db.StoredBlock(ctx, "ETH", 3); err != nil || b != block(3) {
			t.Fatalf("StoredBlock(3) = %+v, %v", b, err)
		}
		if _, err := db.StoredBlock(ctx, "ETH", 6); !errors.Is(err, query.ErrNotFound) {
			t.Fatalf("StoredBlock(6) = %v, want ErrNotFound", err)
		}
		got, err := db.Transaction(ctx, "ETH", tx(4, 3, addrB, addrA).Hash)
		if want := tx(4, 3, addrB, addrA); err != nil || !equalTx(got, want) {
			t.Fatalf("Transaction = %+v, %v\nwant %+v", got, err, want)
		}
		if _, err := db.Transaction(ctx, "ETH", "0xnope"); !errors.Is(err, query.ErrNotFound) {
			t.Fatalf("Transaction(unknown) = %v", err)
		}

		// Pages of 3, most recent first, from either party's side.
		var all []string
		var after *query.TxCursor
		for {
			page, err := db.Transactions(ctx, "ETH", addrA, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page {
				all = append(all, fmt.Sprintf("%d.%d", p.BlockNumber, p.Index))
				if len(p.Transfers) != 2 {
					t.Fatalf("%s has %d transfers", p.Hash, len(p.Transfers))
				}
			}
			if len(page) < 3 {
				break
			}
			last := page[len(page)-1]
			after = &query.TxCursor{BlockNumber: last.BlockNumber, Index: last.Index}
		}
		want := []string{"5.3", "5.0", "4.3", "4.0", "3.3", "3.0", "2.3", "2.0", "1.3", "1.0"}
		if !slices.Equal(all, want) {
			t.Fatalf("pages = %v, want %v", all, want)
		}
		// The token contract is a party of the transfers too, so it is indexed.
		if page, _ := db.Transactions(ctx, "ETH", addrC, nil, 100); len(page) != 0 {
			t.Logf("contract address indexed: %d", len(page))
		}

		// A reorg at 3: blocks 4 and 5 and their transactions go.
		if err := db.Rewind(ctx, "ETH", 3); err != nil {
			t.Fatal(err)
		}
		if cp, _, _ := db.Checkpoint(ctx, "ETH"); cp != block(3) {
			t.Fatalf("Checkpoint after Rewind = %+v", cp)
		}
		if _, err := db.StoredBlock(ctx, "ETH", 4); !errors.Is(err, query.ErrNotFound) {
			t.Fatalf("block 4 after Rewind: %v", err)
		}
		if _, err := db.Transaction(ctx, "ETH", tx(4, 3, addrB, addrA).Hash); !errors.Is(err, query.ErrNotFound) {
			t.Fatalf("tx in block 4 after Rewind: %v", err)
		}
		if page, _ := db.Transactions(ctx, "ETH", addrB, nil, 1); len(page) != 1 || page[0].BlockNumber != 3 {
			t.Fatalf("most recent after Rewind = %+v", page)
		}
		// Backfill does not move the checkpoint.
		if err := db.PutTransactions(ctx, "ETH", []query.Transaction{tx(100, 0, addrA, addrB)}); err != nil {
			t.Fatal(err)
		}
		if cp, _, _ := db.Checkpoint(ctx, "ETH"); cp.Number != 3 {
			t.Fatalf("Checkpoint after PutTransactions = %d", cp.Number)
		}
		bad := tx(7, 0, addrA, addrB)
		bad.Value = query.AmountOf(-15)
		if err := db.PutTransactions(ctx, "ETH", []query.Transaction{bad}); err == nil {
			t.Fatal("PutTransactions stored a negative value")
		}
	})
}

func equalTx(a, b query.Transaction) bool {
	return a.Chain == b.Chain && a.Hash == b.Hash && a.BlockNumber == b.BlockNumber && a.BlockHash == b.BlockHash &&
		a.BlockTime.Equal(b.BlockTime) && a.Index == b.Index && a.Status == b.Status && a.From == b.From &&
		a.To == b.To && a.Value == b.Value && a.Fee == b.Fee && string(a.Detail) == string(b.Detail) && slices.Equal(a.Transfers, b.Transfers)
}

func TestBalances(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, clk *testenv.Clock) {
		ctx := context.Background()
		max256 := query.MustParseAmount("115792089237316195423570985008687907853269984665640564039457584007913129639935")
		put := []query.Balance{
			{Chain: "ETH", Address: addrA, Asset: query.AssetERC20, Contract: addrC, Symbol: "TKN", Decimals: 18, Amount: max256, Block: 10, Updated: clk.Now()},
			{Chain: "ETH", Address: addrA, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Amount: query.AmountOf(5), Block: 10, Updated: clk.Now()},
			{Chain: "ETH", Address: addrA, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Amount: query.AmountOf(7), Block: 12, Updated: clk.Now()},
			{Chain: "ETH", Address: addrA, Asset: query.AssetNative, Symbol: "ETH", Decimals: 18, Amount: query.AmountOf(6), Block: 11, Updated: clk.Now()},
		}
		if err := db.PutBalances(ctx, put); err != nil {
			t.Fatal(err)
		}
		// An older read is ignored; a newer one wins.
		old := put[1]
		old.Amount, old.Block = query.AmountOf(1), 9
		newer := put[0]
		newer.Amount, newer.Block = query.AmountOf(0), 13
		if err := db.StoreBlock(ctx, "ETH", block(13), nil, []query.Balance{old, newer}); err != nil {
			t.Fatal(err)
		}
		got, err := db.Balances(ctx, "ETH", addrA)
		if err != nil || len(got) != 2 {
			t.Fatalf("Balances = %v, %v", got, err)
		}
		if got[0].Asset != query.AssetNative || got[0].Amount != query.AmountOf(7) || got[0].Block != 12 || !got[0].Updated.Equal(clk.Now()) {
			t.Errorf("native = %+v", got[0])
		}
		if got[1].Contract != addrC || got[1].Amount != query.AmountOf(0) || got[1].Block != 13 || got[1].Decimals != 18 || got[1].Symbol != "TKN" {
			t.Errorf("token = %+v", got[1])
		}
		if err := db.PutBalances(ctx, []query.Balance{{Chain: "ETH", Address: addrB, Asset: query.AssetNative, Contract: "", Amount: max256, Block: 1}}); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.Balances(ctx, "ETH", addrB); len(got) != 1 || got[0].Amount != max256 {
			t.Errorf("uint256 max reads back as %+v", got)
		}
		if got, err := db.Balances(ctx, "ETH", addrC); err != nil || len(got) != 0 {
			t.Errorf("no balances = %v, %v", got, err)
		}
		if err := db.PutBalances(ctx, []query.Balance{{Chain: "ETH", Address: addrB, Amount: query.AmountOf(-1)}}); err == nil {
			t.Error("PutBalances stored a negative amount")
		}
	})
}

func TestSecret(t *testing.T) {
	dialects(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := open(t, dsn)
		a, err := db.Secret(ctx, "page-token")
		if err != nil || len(a) != 32 {
			t.Fatalf("Secret = %x, %v", a, err)
		}
		b, _ := db.Secret(ctx, "page-token")
		c, _ := db.Secret(ctx, "other")
		if string(a) != string(b) || string(a) == string(c) {
			t.Fatalf("secrets: %x %x %x", a, b, c)
		}
		// Another handle on the same database (a replica) shares it.
		if d, _ := open(t, dsn).Secret(ctx, "page-token"); string(d) != string(a) {
			t.Fatal("a second handle sees another secret")
		}
	})
}

func TestConcurrentSubscribe(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB, _ *testenv.Clock) {
		ctx := context.Background()
		k, _, _ := db.CreateAPIKey(ctx, "one")
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 32 {
			wg.Go(func() {
				var err error
				if i%2 == 0 {
					_, err = db.Subscribe(ctx, k.AccountID, "ETH", addrA)
				} else if err = db.Unsubscribe(ctx, k.AccountID, "ETH", addrA); errors.Is(err, query.ErrNotFound) {
					err = nil
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		subs, total, _ := db.Subscriptions(ctx, k.AccountID, "", nil, 10)
		tracked, _ := db.Tracked(ctx, "ETH")
		if total != len(subs) || total > 1 || len(tracked) != total {
			t.Fatalf("subscriptions %v (total %d) but tracked %v", subs, total, tracked)
		}
	})
}

func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	t.Run("Closed", func(t *testing.T) {
		db := open(t, filepath.Join(t.TempDir(), "addrd.db"))
		db.Close()
		if err := db.Ping(ctx); !errors.Is(err, query.ErrUnavailable) {
			t.Fatalf("Ping on a closed DB = %v, want ErrUnavailable", err)
		}
	})
	t.Run("PostgreSQLStopped", func(t *testing.T) {
		db := open(t, testenv.Postgres(t))
		testenv.StopPostgres(t)
		stopped := true
		defer func() {
			if stopped {
				testenv.StartPostgres(t)
			}
		}()
		if err := db.Ping(ctx); !errors.Is(err, query.ErrUnavailable) {
			t.Fatalf("Ping with PostgreSQL stopped = %v, want ErrUnavailable", err)
		}
		if _, err := db.Balances(ctx, "ETH", addrA); !errors.Is(err, query.ErrUnavailable) {
			t.Fatalf("Balances with PostgreSQL stopped = %v, want ErrUnavailable", err)
		}
		testenv.StartPostgres(t)
		stopped = false
		if err := db.Ping(ctx); err != nil {
			t.Fatalf("Ping after restart = %v", err)
		}
	})
}

// TestOpenRefusesSchemes: a --db of a scheme addrd does not open is
// refused with the ones it does, and never made into a SQLite file named
// after the scheme ("mysql:"); a password in it is not shown.
func TestOpenRefusesSchemes(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, dsn := range []string{"mysql://root:s3cret@db:3306/addrd", "sqlite:addrd.db", "file:addrd.db", "sqlite3://addrd.db", "redis://cache"} {
		t.Run(dsn, func(t *testing.T) {
			db, err := store.Open(context.Background(), dsn)
			if err == nil {
				db.Close()
				t.Fatal("Open accepted it")
			}
			if !strings.Contains(err.Error(), "postgres:// or postgresql:// URL") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Open = %v, want the schemes that work and no password", err)
			}
		})
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("a refused --db left files behind: %v %v", entries, err)
	}
	// A path with a colon further in, or a drive letter, is still a path.
	for _, dsn := range []string{"data/addrd:1.db", "C:addrd.db"} {
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(context.Background(), dsn)
		if err != nil {
			t.Errorf("Open(%q) = %v, want a SQLite file", dsn, err)
			continue
		}
		db.Close()
	}
}

// newKey creates an API key named name, its account's, and fails t when
// it cannot.
func newKey(t *testing.T, db *store.DB, name string) query.APIKey {
	t.Helper()
	key, _, err := db.CreateAPIKey(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
