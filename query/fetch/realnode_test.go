package fetch_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm"
	"github.com/wharfhq/wharf/query/fetch"
	"github.com/wharfhq/wharf/query/store"
)

// realNode dials the EVM node at url and opens a fresh SQLite store
// with one API key, each closed when the test ends: what every
// statement test against a real node starts from.
func realNode(t *testing.T, url string) (*evm.Source, *store.DB, query.APIKey) {
	t.Helper()
	ctx := context.Background()
	src, err := evm.Dial(ctx, url, evm.SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	db, key := storeWithKey(t)
	return src, db, key
}

// storeWithKey opens a fresh SQLite store, closed when the test ends,
// with one API key, alice's.
func storeWithKey(t *testing.T) (*store.DB, query.APIKey) {
	t.Helper()
	db, err := store.Open(context.Background(), testenv.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, _, err := db.CreateAPIKey(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	return db, key
}

// realNodeFetcher is a fetcher of chain over src with traces on, probed:
// the test fails unless the node answers a trace API, whose name it
// returns.
func realNodeFetcher(t *testing.T, db *store.DB, src *evm.Source) *fetch.Fetcher {
	t.Helper()
	f, err := fetch.New(fetch.Config{Chain: chain, Store: db, Reader: evm.NewReader(src), Internals: fetch.InternalsOn,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Probe(context.Background()); err != nil || f.InternalsSource() == "" {
		t.Fatalf("probe: %q, %v; want a trace API", f.InternalsSource(), err)
	}
	return f
}

// catchUpNode fetches until the stored checkpoint reaches the node's
// head, failing the test after 100 steps.
func catchUpNode(t *testing.T, f *fetch.Fetcher, db *store.DB, src *evm.Source) {
	t.Helper()
	ctx := context.Background()
	for range 100 {
		if err := f.FetchOnce(ctx); err != nil {
			t.Fatalf("FetchOnce: %v", err)
		}
		cp, _, _ := db.Checkpoint(ctx, chain)
		head, err := src.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Number >= head {
			return
		}
	}
	t.Fatal("no catching up in 100 steps")
}
