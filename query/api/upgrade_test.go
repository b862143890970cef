package api_test

import (
	"context"
	"database/sql"
	"encoding/csv"
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
	"github.com/wharfhq/wharf/query/evm"
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
	db, err := store.Open(ctx, dsn, store.WithLegacyDetail(evm.LegacyDetail))
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

// canonical is an answer "STATUS BODY" with a JSON body's objects
// written with their members in name order, without the members gained
// since the release: the member order of a transaction changed with
// chain families (confirmations now follows the family's fields), and
// rows and transactions gained their finality, nothing else did.
func canonical(t *testing.T, answer string) string {
	t.Helper()
	status, body, _ := strings.Cut(answer, " ")
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return answer // not JSON: a CSV export
	}
	dropGained(v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return status + " " + string(b)
}

// gained are the members of the API's objects that came after the
// release.
var gained = []string{"finality"}

// dropGained deletes the gained members of every object in v.
func dropGained(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, name := range gained {
			delete(v, name)
		}
		for _, m := range v {
			dropGained(m)
		}
	case []any:
		for _, m := range v {
			dropGained(m)
		}
	}
}

// sameCSV reports whether got, an answer that is a CSV export, holds
// want's columns with want's values, row for row: an export may gain
// columns (the fee's parts came after the release).
func sameCSV(got, want string) bool {
	gs, gb, _ := strings.Cut(got, " ")
	ws, wb, _ := strings.Cut(want, " ")
	g, err1 := csv.NewReader(strings.NewReader(gb)).ReadAll()
	w, err2 := csv.NewReader(strings.NewReader(wb)).ReadAll()
	if gs != ws || err1 != nil || err2 != nil || len(g) != len(w) || len(w) == 0 {
		return false
	}
	col := make(map[string]int)
	for i, name := range g[0] {
		col[name] = i
	}
	for r := range w {
		for i, name := range w[0] {
			j, ok := col[name]
			if !ok || len(g[r]) <= j || len(w[r]) <= i || g[r][j] != w[r][i] {
				return false
			}
		}
	}
	return true
}

// TestUpgradeFromRelease: a database written by the release before chain
// families, upgraded in place, answers every read as the release did:
// the same bytes, but for the order of a transaction's members and the
// columns an export gained since (its
// chains' identities now CAIP-2): every page of transactions, statement rows, balances,
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
			for _, table := range []string{"transactions", "tx_addresses"} {
				var all, old int
				if err := db.Bun().NewRaw("SELECT count(*), count(CASE WHEN substr(doc, 1, 3) <> '1:6' THEN 1 END) FROM "+table).
					Scan(context.Background(), &all, &old); err != nil {
					t.Fatal(err)
				}
				if all == 0 || old != 0 {
					t.Errorf("%s: %d of %d documents not rewritten to version 6", table, old, all)
				}
			}
			var rows, old int
			if err := db.Bun().NewRaw("SELECT count(*), count(CASE WHEN substr(doc, 1, 3) <> '1:4' THEN 1 END) FROM balance_changes").
				Scan(context.Background(), &rows, &old); err != nil {
				t.Fatal(err)
			}
			if rows == 0 || old != 0 {
				t.Errorf("balance_changes: %d of %d statement rows not rewritten to version 4", old, rows)
			}
			h := api.New(api.Config{Store: db, Chains: []string{"ETH", "TST"}, Syntax: evmSyntax("ETH", "TST"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
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
				if got, want := fmt.Sprintf("%d %s", res.StatusCode, body), reads[path]; canonical(t, got) != canonical(t, want) && !sameCSV(got, want) {
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
