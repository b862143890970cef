package benchdata

import (
	"context"
	"fmt"

	"github.com/wharfhq/wharf/query/store"
)

// Issue-size data of the addrd benchmarks: 10,000 subscribed addresses
// and 1,000,000 transactions, every 50th touching the hot address.
const (
	BenchAddresses    = 10_000
	BenchTransactions = 1_000_000
)

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
