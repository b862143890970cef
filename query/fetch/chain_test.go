package fetch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// chainFetcher is a fetcher of chain "ETH" over a dev chain of chain ID
// id and the database at dsn.
func chainFetcher(t *testing.T, dsn string, id uint64, native query.NativeCoin) (*fetch.Fetcher, *store.DB, *devchain.Chain) {
	t.Helper()
	e := newEnvOn(t, devchain.Config{ChainID: id}, dsn, fetch.Config{Native: native})
	return e.f, e.db, e.dev
}

// TestChainIDRefused points a database that fetched one chain at a node
// of another chain ID under the same name: refused, nothing stored.
func TestChainIDRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.SQLite(t)
	f1, db1, _ := chainFetcher(t, dsn, 1337, query.NativeCoin{})
	if err := f1.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	cp1, _, err := db1.Checkpoint(ctx, chain)
	if err != nil {
		t.Fatal(err)
	}

	f2, db2, dev2 := chainFetcher(t, dsn, 11155111, query.NativeCoin{})
	dev2.Commit()
	dev2.Commit()
	for _, check := range []func() error{func() error { return f2.CheckChain(ctx) }, func() error { return f2.FetchOnce(ctx) }} {
		err := check()
		if !errors.Is(err, fetch.ErrChainMismatch) {
			t.Fatalf("err %v, want ErrChainMismatch", err)
		}
		for _, want := range []string{"eip155:11155111 (Sepolia)", "eip155:1337", "refusing"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}
	if err := f2.Health(); !errors.Is(err, fetch.ErrChainMismatch) {
		t.Errorf("Health() = %v, want the mismatch", err)
	}
	cp2, _, err := db2.Checkpoint(ctx, chain)
	if err != nil {
		t.Fatal(err)
	}
	if cp2 != cp1 {
		t.Fatalf("checkpoint moved to %+v from %+v: the other chain was fetched", cp2, cp1)
	}
	// The first node again: accepted.
	f3, _, _ := chainFetcher(t, dsn, 1337, query.NativeCoin{})
	if err := f3.CheckChain(ctx); err != nil {
		t.Fatalf("the recorded chain ID refused: %v", err)
	}
}

// TestNativeCoin: the native balance's symbol and decimals come from the
// table by chain ID, or from the configuration; an unknown chain ID
// without one is an error that says what to do.
func TestNativeCoin(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		id      uint64
		native  query.NativeCoin
		want    query.NativeCoin
		wantErr string
	}{
		{"Polygon", 137, query.NativeCoin{}, query.NativeCoin{Symbol: "POL", Decimals: 18}, ""},
		{"BNB", 56, query.NativeCoin{}, query.NativeCoin{Symbol: "BNB", Decimals: 18}, ""},
		{"Given", 424242, query.NativeCoin{Symbol: "XYZ", Decimals: 9}, query.NativeCoin{Symbol: "XYZ", Decimals: 9}, ""},
		{"GivenOverridesTable", 1, query.NativeCoin{Symbol: "GWEI", Decimals: 9}, query.NativeCoin{Symbol: "GWEI", Decimals: 9}, ""},
		{"Unknown", 424242, query.NativeCoin{}, query.NativeCoin{}, "--chain ETH:SYMBOL:DECIMALS=RPC_URL"},
		// ZKsync Era's fee refunds and system-contract ether break the EVM
		// rules: refused with why, also when the coin is given.
		{"ZKsyncRefused", 324, query.NativeCoin{}, query.NativeCoin{}, "324 (ZKsync Era), which addrd refuses: ZKsync Era refunds part of each fee"},
		{"ZKsyncRefusedGiven", 324, query.NativeCoin{Symbol: "ETH", Decimals: 18}, query.NativeCoin{}, "which addrd refuses"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, db, dev := chainFetcher(t, testenv.SQLite(t), c.id, c.native)
			err := f.FetchOnce(ctx)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			key, _, err := db.CreateAPIKey(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			a := addr(dev.Accounts[1])
			if _, err := db.Subscribe(ctx, key.AccountID, chain, a); err != nil {
				t.Fatal(err)
			}
			if err := f.FetchOnce(ctx); err != nil {
				t.Fatal(err)
			}
			bals, err := db.AccountBalances(ctx, key.AccountID, chain, a)
			if err != nil || len(bals) == 0 {
				t.Fatalf("balances %v, %v", bals, err)
			}
			if got := (query.NativeCoin{Symbol: bals[0].Symbol, Decimals: bals[0].Decimals}); bals[0].Asset != query.AssetNative || got != c.want {
				t.Fatalf("native balance %+v, want %+v", bals[0], c.want)
			}
		})
	}
}
