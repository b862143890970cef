package benchdata

import (
	"path/filepath"
	"testing"

	"github.com/wharfhq/wharf/query/store"
)

// TestOpenCached: the second open of a size copies the first's data set
// (the same rows, the same key), and another size makes its own, which
// replaces the first in the cache.
func TestOpenCached(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	count := func(db *store.DB) (n int) {
		t.Helper()
		if err := db.Bun().QueryRowContext(ctx, "SELECT count(*) FROM tx_addresses").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	open := func(addresses, txs int, wantCached bool) int {
		t.Helper()
		db, id, secret, cached, err := openCached(ctx, dir, filepath.Join(t.TempDir(), "addrd.db"), size{addresses, txs, 10})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if cached != wantCached {
			t.Fatalf("%d addresses, %d txs: from the cache %v, want %v", addresses, txs, cached, wantCached)
		}
		if _, err := db.Authenticate(ctx, id, secret); err != nil {
			t.Fatalf("the data set's key: %v", err)
		}
		return count(db)
	}
	first := open(20, 300, false)
	if first == 0 {
		t.Fatal("no rows seeded")
	}
	if again := open(20, 300, true); again != first {
		t.Fatalf("copied data set has %d rows, the one made %d", again, first)
	}
	if other := open(20, 400, false); other <= first {
		t.Fatalf("400 transactions: %d rows, 300 had %d", other, first)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.db"))
	if len(entries) != 1 {
		t.Fatalf("cache holds %v, want the last data set alone", entries)
	}
}
