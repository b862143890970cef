// Package store implements query.Store and query.FetchStore on bun, over
// SQLite (modernc.org/sqlite, pure Go; the default) or PostgreSQL
// (lib/pq). Both share one set of embedded, versioned migrations, applied
// by Open.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lib/pq"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/wharfhq/wharf/internal/sqlitewal"
	"github.com/wharfhq/wharf/query"
)

// DefaultDSN is the database addrd uses when none is given: a SQLite file
// in the working directory.
const DefaultDSN = "addrd.db"

// DB is the address-data storage. It is safe for concurrent use.
type DB struct {
	// w takes every write; on SQLite it is a single connection, so writers
	// queue in Go instead of failing with SQLITE_BUSY.
	w *bun.DB
	// r serves reads outside transactions; on PostgreSQL it is w.
	r        *bun.DB
	stmts    stmtCache  // the hot reads, prepared on r
	writes   writeStmts // the fetcher's writes, prepared on w (insert.go)
	texts    rangeTexts // the books reads' texts (rangesql.go)
	postgres bool
	now      func() time.Time
	rand     io.Reader
	// maxSubscriptions bounds the subscriptions of an account; 0: none.
	maxSubscriptions int
	// quarantined is told of each field stored changed (quarantine.go).
	quarantined func(query.Quarantined)
	// maxWebhooks bounds the webhook endpoints of an account; 0: none.
	maxWebhooks int
	// legacy reads the transactions stored before chain families
	// (WithLegacyDetail); nil: none.
	legacy LegacyDetail
	// onEvents is called after a commit that may have written events.
	onEvents atomic.Pointer[func()]
}

var (
	_ query.Store        = (*DB)(nil)
	_ query.FetchStore   = (*DB)(nil)
	_ query.EventStore   = (*DB)(nil)
	_ query.WebhookStore = (*DB)(nil)
)

// Option configures Open.
type Option func(*DB)

// WithNow sets the clock that stamps rows (default time.Now).
func WithNow(now func() time.Time) Option { return func(db *DB) { db.now = now } }

// WithMaxSubscriptions bounds the subscriptions of one account: Subscribe
// refuses a new one beyond n with query.ErrTooManySubscriptions. Zero (the
// default) is no bound.
func WithMaxSubscriptions(n int) Option { return func(db *DB) { db.maxSubscriptions = n } }

// WithRand sets the source of key IDs, secrets and server secrets
// (default crypto/rand).
func WithRand(r io.Reader) Option { return func(db *DB) { db.rand = r } }

// IsPostgres reports whether dsn names a PostgreSQL database rather than
// a SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// urlScheme returns the scheme of a dsn that starts like a URL
// ("mysql://…", "sqlite:x.db", "file:x.db"): two or more letters, digits,
// "+", "-" or "." before a colon, so that a Windows drive ("C:") is a path.
func urlScheme(dsn string) (string, bool) {
	i := strings.IndexByte(dsn, ':')
	if i < 2 {
		return "", false
	}
	for j, c := range dsn[:i] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return dsn[:i], true
}

// Open opens the database named by dsn (a SQLite file path or a
// postgres:// URL) and applies the pending migrations.
func Open(ctx context.Context, dsn string, opts ...Option) (*DB, error) {
	db, err := open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// OpenNoMigrate opens the database without applying migrations, for
// `addrd migrate` and for tests of the migrations themselves.
func OpenNoMigrate(dsn string, opts ...Option) (*DB, error) {
	return open(context.Background(), dsn, opts)
}

func open(ctx context.Context, dsn string, opts []Option) (*DB, error) {
	if dsn == "" {
		dsn = DefaultDSN
	}
	db := &DB{now: time.Now, rand: rand.Reader}
	for _, o := range opts {
		o(db)
	}
	if IsPostgres(dsn) {
		conn, err := pq.NewConnector(genericPlans(dsn))
		if err != nil {
			return nil, fmt.Errorf("store: open %s: %w", Redact(dsn), err)
		}
		conn.Dialer(pqDialer{})
		sqldb := sql.OpenDB(conn)
		sqldb.SetMaxOpenConns(postgresConns)
		sqldb.SetMaxIdleConns(postgresConns)
		sqldb.SetConnMaxIdleTime(5 * time.Minute)
		db.postgres = true
		db.w = bun.NewDB(sqldb, pgdialect.New())
		db.r = db.w
		return db, nil
	}
	if scheme, ok := urlScheme(dsn); ok {
		return nil, fmt.Errorf("store: --db %s: the scheme %s: is not one addrd opens; give a SQLite file path (such as addrd.db, without file:) or a postgres:// or postgresql:// URL", Redact(dsn), scheme)
	}
	if strings.ContainsAny(dsn, "?#") {
		return nil, fmt.Errorf("store: SQLite path %q: must not contain '?' or '#'", dsn)
	}
	if err := sqlitewal.Enable(ctx, "file:"+dsn+"?_pragma=busy_timeout(10000)"); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dsn, err)
	}
	// The file is in WAL mode (sqlitewal.Enable above; the mode is stored
	// in the file), so the connections need not ask for it again.
	const pragmas = "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	// The writer keeps its statement journals in memory (a multi-row upsert
	// inside a transaction writes one; spilled to a temporary file it costs
	// a write per page) and a page cache of up to 256 MiB, so that a batch
	// of the fetcher's blocks finds the index pages it updates. At 64 MiB,
	// the pages of 100,000 subscriptions written through the same
	// connection filled it: every commit then dropped the pages it wrote
	// and the next read them back, and a block cost 30% more (BenchmarkFetch).
	const writer = "&_pragma=temp_store(memory)&_pragma=cache_size(-262144)&_txlock=immediate"
	w, err := sql.Open("sqlite", "file:"+dsn+"?"+pragmas+writer)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dsn, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", "file:"+dsn+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", dsn, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(0)
	db.w = bun.NewDB(w, sqlitedialect.New())
	db.r = bun.NewDB(r, sqlitedialect.New())
	return db, nil
}

// genericPlans is a PostgreSQL dsn whose connections run every prepared
// statement with its generic plan (plan_cache_mode, PostgreSQL 12), unless
// the dsn sets plan_cache_mode itself. The statements the store prepares
// are the hot reads (prepared.go), written for one plan whatever their
// parameters and checked as generic plans (BenchmarkBooksPlans); left to
// choose, PostgreSQL plans a statement for its parameters five times and
// keeps planning it so when the generic plan's estimate is dearer, which
// the statistics decide: where a few addresses hold most of the
// statement's rows (a treasury's database, BenchmarkBooks'), a bound
// LIMIT is costed at a tenth of the address's rows, and the plain
// statement page was planned again at every request (250–600 µs of
// PostgreSQL's CPU, three times its execution). Queries run through bun
// have no parameters: bun writes the values into the text.
func genericPlans(dsn string) string {
	if strings.Contains(dsn, "plan_cache_mode=") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&plan_cache_mode=force_generic_plan"
	}
	return dsn + "?plan_cache_mode=force_generic_plan"
}

// Redact hides the password of a DSN, for logs and error messages.
func Redact(dsn string) string {
	i := strings.Index(dsn, "://")
	j := strings.LastIndex(dsn, "@")
	if i < 0 || j < i {
		return dsn
	}
	userinfo := dsn[i+3 : j]
	if k := strings.IndexByte(userinfo, ':'); k >= 0 {
		return dsn[:i+3] + userinfo[:k] + ":xxxxx" + dsn[j:]
	}
	return dsn
}

// postgresConns bounds the connections to PostgreSQL. More only queue in
// the server: on a 2-core machine 48 gave the API twice the p99 of 16 at
// the same throughput.
const postgresConns = 16

// Readers is the number of connections the API may read through at once,
// the bound for api.Config.MaxInFlight. On PostgreSQL, readers and
// writers share one pool, where a fetcher holds a connection for its
// leadership lock and takes another for its writes.
func (db *DB) Readers() int {
	n := db.r.DB.Stats().MaxOpenConnections
	if db.postgres {
		n -= 2
	}
	return n
}

// Close closes the database.
func (db *DB) Close() error {
	err := errors.Join(db.stmts.close(), db.writes.close(), db.w.Close())
	if db.r != db.w {
		err = errors.Join(err, db.r.Close())
	}
	return err
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.w.PingContext(ctx); err != nil {
		return wrap("ping", err)
	}
	// A ping may be answered from an idle pooled connection without a
	// round trip; a query is not.
	var one int
	if err := db.r.NewRaw("SELECT 1").Scan(ctx, &one); err != nil {
		return wrap("ping", err)
	}
	return nil
}

// Postgres reports whether db is a PostgreSQL database.
func (db *DB) Postgres() bool { return db.postgres }

// Bun returns the writer handle, for tests.
func (db *DB) Bun() *bun.DB { return db.w }

// stamp is the clock's now, in UTC and at PostgreSQL's precision, so that
// what is written reads back equal.
func (db *DB) stamp() time.Time { return db.now().UTC().Truncate(time.Microsecond) }

// tx runs f in a write transaction. When ctx carries a fetcher's lease
// (query.WithLease), the transaction first checks that the lease is
// still held and fails with query.ErrLeaseLost otherwise: every write of
// the fetcher goes through here, so a replica that lost its lease writes
// nothing (fencing).
func (db *DB) tx(ctx context.Context, f func(tx bun.Tx) error) error {
	return db.w.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if l, ok := query.LeaseFrom(ctx); ok {
			if err := db.fence(ctx, tx, l); err != nil {
				return err
			}
		}
		return f(tx)
	})
}

// wrap translates a driver error into the query errors and adds the
// operation: no rows is query.ErrNotFound, a database that cannot be
// reached is query.ErrUnavailable.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, query.ErrNotFound), errors.Is(err, query.ErrUnavailable), errors.Is(err, query.ErrUnauthenticated),
		errors.Is(err, query.ErrNotSubscribed):
		return fmt.Errorf("store: %s: %w", op, err)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: %s: %w", op, query.ErrNotFound)
	case unavailable(err):
		return fmt.Errorf("store: %s: %w: %w", op, query.ErrUnavailable, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// unavailable reports whether err means the database cannot be reached
// now but may be later.
func unavailable(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var nerr net.Error
	if errors.As(err, &nerr) {
		return true
	}
	var perr *pq.Error
	if errors.As(err, &perr) {
		switch {
		case perr.Code.Class() == "08", // connection exception
			perr.Code.Class() == "53",                                        // insufficient resources
			perr.Code == "57P01", perr.Code == "57P02", perr.Code == "57P03": // shutdown, crash, starting up
			return true
		}
	}
	var serr *sqlite.Error
	if errors.As(err, &serr) {
		switch serr.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL: // the disk is full: a write may pass once it has room again
			return true
		}
	}
	// database/sql does not export its "database is closed" error.
	return strings.Contains(err.Error(), "sql: database is closed")
}

// isNoRows reports whether err is database/sql's "no rows".
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// utc returns t in UTC, so that times read from either dialect compare
// equal with ==; the zero time stays zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
