package api_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
)

// The upgrade fixture (testdata/upgrade, see its README.md) is a
// database written by the release before chain families, on each
// dialect, with what the API answered to every read of it then.

// openRelease opens a copy of the release's database on the dialect
// named dialect: the migrations since are applied as store.Open applies
// them.
func openRelease(t *testing.T, dialect string) *store.DB {
	t.Helper()
	ctx := context.Background()
	var dsn string
	switch dialect {
	case "SQLite":
		b, err := os.ReadFile(filepath.Join("testdata", "upgrade", "release.sqlite"))
		if err != nil {
			t.Fatal(err)
		}
		dsn = testenv.SQLite(t)
		if err := os.WriteFile(dsn, b, 0o644); err != nil {
			t.Fatal(err)
		}
	case "PostgreSQL":
		dump, err := os.ReadFile(filepath.Join("testdata", "upgrade", "release.postgresql.sql"))
		if err != nil {
			t.Fatal(err)
		}
		dsn = testenv.Postgres(t)
		// Its own connection: the dump empties the search path.
		raw, err := sql.Open("postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		_, err = raw.ExecContext(ctx, string(dump))
		raw.Close()
		if err != nil {
			t.Fatalf("loading the release's dump: %v", err)
		}
	default:
		t.Fatalf("no release fixture for %s", dialect)
	}
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("opening the release's database: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// releaseReads are the release's answers to the reads of its database,
// by path, and the API key they were made with.
func releaseReads(t *testing.T, dialect string) (reads map[string]string, id, secret string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "upgrade", "reads."+strings.ToLower(dialect)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &reads); err != nil {
		t.Fatal(err)
	}
	id, secret, _ = strings.Cut(reads["key"], ":")
	delete(reads, "key")
	return reads, id, secret
}

// TestUpgradeFromRelease: a database written by the release before chain
// families, upgraded in place, answers every read as the release did,
// byte for byte (its chains' identities now CAIP-2): every page of transactions, statement rows, balances,
// balances as of a block, exports and transactions by hash.
func TestUpgradeFromRelease(t *testing.T) {
	for _, d := range testenv.DBs() {
		t.Run(d.Name, func(t *testing.T) {
			db := openRelease(t, d.Name)
			reads, id, secret := releaseReads(t, d.Name)
			for chain, want := range map[string]query.ChainIdentity{
				"ETH": {ID: "eip155:1", Genesis: "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3"},
				"TST": {ID: "eip155:1337"},
			} {
				if got, err := db.ChainIdentity(context.Background(), chain); err != nil || got != want {
					t.Errorf("%s after the upgrade: %+v, %v; want %+v", chain, got, err, want)
				}
			}
			h := api.New(api.Config{Store: db, Chains: []string{"ETH", "TST"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Metrics: prometheus.NewRegistry()})
			srv := httptest.NewServer(h)
			defer srv.Close()
			paths := slices.Sorted(func(yield func(string) bool) {
				for p := range reads {
					if !yield(p) {
						return
					}
				}
			})
			bad := 0
			for _, path := range paths {
				req, err := http.NewRequest("GET", srv.URL+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.SetBasicAuth(id, secret)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if got, want := fmt.Sprintf("%d %s", res.StatusCode, body), reads[path]; got != want {
					if bad++; bad <= 3 {
						t.Errorf("GET %s after the upgrade:\n got %.2000s\nwant %.2000s", path, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d reads differ after the upgrade", bad, len(paths))
			}
		})
	}
}
