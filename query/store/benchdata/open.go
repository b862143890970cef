package benchdata

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wharfhq/wharf/query/store"
)

// Issue-size data of the addrd benchmarks: 10,000 subscribed addresses
// and 1,000,000 transactions, every 50th touching the hot address, whose
// statement has 20,000 rows. WHARF_BENCH_ADDRESSES and WHARF_BENCH_TXS
// set other sizes (a quicker set-up while iterating).
const (
	BenchAddresses     = 10_000
	BenchTransactions  = 1_000_000
	BenchStatementRows = 20_000
)

// hotEvery is the HotEvery of txs transactions: 50, or less in a
// smaller data set, so that the hot address has the 10,050 transactions
// the depth benchmarks page through.
func hotEvery(txs int) int {
	return max(1, min(50, txs/10_050))
}

// envSize is the environment variable name as a positive integer, or def.
func envSize(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("benchdata: %s=%q is not a positive integer", name, v)
	}
	return n, nil
}

// Run runs f as a sub-benchmark on PostgreSQL, in a database that
// postgres makes (testenv.Postgres), and on SQLite, in a temporary file,
// each opened and seeded as Open does. The SQLite data set is kept in a
// cache directory and copied from there when it was made already
// (cache.go; WHARF_BENCH_CACHE names the directory, "off" keeps none).
func Run(b *testing.B, postgres func(testing.TB) string, f func(b *testing.B, db *store.DB, id, secret string)) {
	for _, d := range []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"PostgreSQL", func(b *testing.B) string { return postgres(b) }},
		{"SQLite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "addrd.db") }},
	} {
		b.Run(d.name, func(b *testing.B) {
			addresses, err := envSize("WHARF_BENCH_ADDRESSES", BenchAddresses)
			if err != nil {
				b.Fatal(err)
			}
			txs, err := envSize("WHARF_BENCH_TXS", BenchTransactions)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			var (
				db         *store.DB
				id, secret string
				how        = "seeded"
			)
			if dir := cacheDir(); d.name == "SQLite" && dir != "" {
				var cached bool
				db, id, secret, cached, err = openCached(context.Background(), dir, d.dsn(b), size{addresses, txs, BenchStatementRows})
				if cached {
					how = "copied from " + dir
				}
			} else {
				db, id, secret, err = OpenSized(context.Background(), d.dsn(b), addresses, txs)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			b.Logf("%s %d addresses and %d transactions in %v", how, addresses, txs, time.Since(start).Round(time.Second))
			f(b, db, id, secret)
		})
	}
}

// A size is the numbers of a data set of the benchmarks.
type size struct{ addresses, txs, statementRows int }

// config is the data set of size for account.
func (z size) config(account int64) Config {
	return Config{Chain: "ETH", Account: account, Addresses: z.addresses, Transactions: z.txs,
		HotEvery: hotEvery(z.txs), StatementRows: z.statementRows}
}

// Open opens the database at dsn, creates an API key "bench" and seeds it
// with the benchmarks' data on chain ETH. It returns the key's id and
// secret for HTTP basic auth.
func Open(ctx context.Context, dsn string) (db *store.DB, id, secret string, err error) {
	return OpenSized(ctx, dsn, BenchAddresses, BenchTransactions)
}

// OpenSized is Open with other numbers of addresses and transactions.
func OpenSized(ctx context.Context, dsn string, addresses, txs int) (db *store.DB, id, secret string, err error) {
	return open(ctx, dsn, size{addresses, txs, BenchStatementRows})
}

func open(ctx context.Context, dsn string, z size) (db *store.DB, id, secret string, err error) {
	db, err = store.Open(ctx, dsn)
	if err != nil {
		return nil, "", "", err
	}
	key, secret, err := db.CreateAPIKey(ctx, "bench")
	if err == nil {
		err = Seed(ctx, db, z.config(key.AccountID))
	}
	if err != nil {
		db.Close()
		return nil, "", "", fmt.Errorf("benchdata: %w", err)
	}
	return db, key.ID, secret, nil
}
