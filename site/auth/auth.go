// Package auth keeps the organisations, users, API keys and the token
// issuer key of the download server in a database (SQLite by default,
// PostgreSQL for a postgres:// DSN) through bun, and checks the
// credentials of requests: it implements site.Authenticator.
package auth

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	_ "github.com/lib/pq" // driver "postgres"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite" // driver "sqlite", pure Go

	"github.com/wharfhq/wharf/internal/pghint"
	"github.com/wharfhq/wharf/internal/sqlitewal"
	"github.com/wharfhq/wharf/site"
)

// Errors of the administrative operations; compare with errors.Is.
var (
	// ErrNotFound: no organisation, user or API key of that name or id.
	ErrNotFound = errors.New("not found")
	// ErrExists: an organisation of that name exists already.
	ErrExists = errors.New("already exists")
	// ErrInvalid: a malformed name or level.
	ErrInvalid = errors.New("invalid argument")
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// DB is the auth database. Its methods are safe for concurrent use.
type DB struct {
	db *bun.DB
	// Now is the clock tokens and API key use are checked and stamped
	// against; Open sets it to time.Now.
	Now func() time.Time
	// OIDC, when set, also accepts the tokens of an external OpenID
	// Connect issuer for users that exist here.
	OIDC *OIDC

	issuer   issuerCache
	keyStmt  *sql.Stmt // keyQuery, prepared
	postgres bool
	wait     time.Duration // SetPool
}

var _ site.Authenticator = (*DB)(nil)

// Open connects to the database named by dsn and applies the embedded
// migrations. A dsn starting with postgres:// or postgresql:// is a
// PostgreSQL DSN (lib/pq); anything else is a SQLite file path.
func Open(ctx context.Context, dsn string) (*DB, error) {
	var bdb *bun.DB
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		sqldb, err := sql.Open("postgres", dsn)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", redact(dsn), err)
		}
		bdb = bun.NewDB(sqldb, pgdialect.New())
	} else {
		if dsn == "" {
			return nil, fmt.Errorf("open database: %w: empty path", ErrInvalid)
		}
		if dsn != ":memory:" {
			if err := privateFiles(sqlitePath(dsn)); err != nil {
				return nil, fmt.Errorf("open %s: %w", dsn, err)
			}
			if err := sqlitewal.Enable(ctx, sqliteDSN(dsn)); err != nil {
				return nil, fmt.Errorf("open %s: %w", dsn, err)
			}
		}
		sqldb, err := sql.Open("sqlite", sqliteDSN(dsn))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", dsn, err)
		}
		if dsn == ":memory:" {
			// Every connection of an in-memory database is a database of its own.
			sqldb.SetMaxOpenConns(1)
		}
		bdb = bun.NewDB(sqldb, sqlitedialect.New())
	}
	d := &DB{db: bdb, Now: time.Now, postgres: bdb.Dialect().Name() == dialect.PG}
	if err := d.migrate(ctx); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open %s: %w", redact(dsn), pghint.Explain(err))
	}
	st, err := prepareKeyQuery(ctx, bdb, d.postgres)
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open %s: %w", redact(dsn), pghint.Explain(err))
	}
	d.keyStmt = st
	return d, nil
}

// sqlitePath is the file a SQLite DSN names ("file:" and the query
// stripped).
func sqlitePath(dsn string) string {
	p, ok := strings.CutPrefix(dsn, "file:")
	if ok {
		p, _, _ = strings.Cut(p, "?")
	}
	return p
}

// privateFiles makes the database file 0600 before SQLite opens it: it
// holds the key that signs access tokens and the hashes of the API keys.
// A missing file is created 0600 (SQLite gives its -wal and -shm files the
// main file's mode); an existing one, and its -wal and -shm, lose any
// group and other bits.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, st.Mode().Perm()&0o700); err != nil {
				return fmt.Errorf("make %s private: %w", p, err)
			}
		}
	}
	return nil
}

// sqliteDSN adds the pragmas wharf relies on: foreign keys for cascading
// deletes and a busy timeout, so that `wharf serve` and the admin commands
// can use the same file at once (in WAL mode, which Open sets once with
// sqlitewal.Enable).
func sqliteDSN(path string) string {
	pragmas := "_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)"
	if path == ":memory:" {
		return "file::memory:?" + pragmas
	}
	if strings.HasPrefix(path, "file:") {
		if strings.Contains(path, "?") {
			return path + "&" + pragmas
		}
		return path + "?" + pragmas
	}
	return "file:" + path + "?" + pragmas
}

// redact hides the password of a DSN in messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxx")
	}
	return u.String()
}

// migrate applies the embedded migrations not applied yet. Concurrent
// openers wait for the migration lock.
func (d *DB) migrate(ctx context.Context) error {
	ms := migrate.NewMigrations()
	if err := ms.Discover(migrationFiles); err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	// Marked applied only once it ran: another process that finds it
	// applied may use its tables.
	m := migrate.NewMigrator(d.db, ms, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("init migrations: %w", err)
	}
	all, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	if len(all.Unapplied()) == 0 {
		return nil
	}
	if err := lockMigrations(ctx, m); err != nil {
		return err
	}
	defer m.Unlock(context.WithoutCancel(ctx))
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// lockMigrations takes the migration lock, waiting up to 30 s for another
// process that holds it.
func lockMigrations(ctx context.Context, m *migrate.Migrator) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := m.Lock(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock migrations: %w", err)
		case <-tick.C:
		}
	}
}

// Close closes the database.
func (d *DB) Close() error {
	return errors.Join(d.keyStmt.Close(), d.db.Close())
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error { return d.db.PingContext(ctx) }

func (d *DB) now() time.Time { return d.Now().UTC() }

// validName reports whether s may name an organisation or a user: 1 to 128
// letters, digits and ". _ @ -", not starting with a dash.
func validName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '-' {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '.' || r == '_' || r == '@' || r == '-':
		default:
			return false
		}
	}
	return true
}

func checkName(what, s string) error {
	if !validName(s) {
		return fmt.Errorf("%w: %s name %q: use 1-128 letters, digits, '.', '_', '@' or '-'", ErrInvalid, what, s)
	}
	return nil
}

// isUniqueViolation reports whether err is a unique or primary key
// violation on SQLite or PostgreSQL.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "duplicate key value") ||
		strings.Contains(s, "23505")
}
