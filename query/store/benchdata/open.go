package benchdata

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query/store"
)

// Issue-size data of the addrd benchmarks: 10,000 subscribed addresses
// and 1,000,000 transactions, every 50th touching the hot address.
const (
	BenchAddresses    = 10_000
	BenchTransactions = 1_000_000
)

// Run runs f as a sub-benchmark on PostgreSQL, in a database that
// postgres makes (testenv.Postgres), and on SQLite, in a temporary file,
// each opened and seeded as Open does.
func Run(b *testing.B, postgres func(testing.TB) string, f func(b *testing.B, db *store.DB, id, secret string)) {
	for _, d := range []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"PostgreSQL", func(b *testing.B) string { return postgres(b) }},
		{"SQLite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "addrd.db") }},
	} {
		b.Run(d.name, func(b *testing.B) {
			start := time.Now()
			db, id, secret, err := Open(context.Background(), d.dsn(b))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			b.Logf("seeded %d addresses and %d transactions in %v", BenchAddresses, BenchTransactions, time.Since(start).Round(time.Second))
			f(b, db, id, secret)
		})
	}
}

// Open opens the database at dsn, creates an API key "bench" and seeds it
// with the benchmarks' data on chain ETH. It returns the key's id and
// secret for HTTP basic auth.
func Open(ctx context.Context, dsn string) (db *store.DB, id, secret string, err error) {
	db, err = store.Open(ctx, dsn)
	if err != nil {
		return nil, "", "", err
	}
	key, secret, err := db.CreateAPIKey(ctx, "bench")
	if err == nil {
		err = Seed(ctx, db, Config{Chain: "ETH", Account: key.AccountID,
			Addresses: BenchAddresses, Transactions: BenchTransactions, HotEvery: 50})
	}
	if err != nil {
		db.Close()
		return nil, "", "", fmt.Errorf("benchdata: %w", err)
	}
	return db, key.ID, secret, nil
}
