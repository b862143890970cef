package testenv

import (
	"path/filepath"
	"testing"
)

// DB is a database backend addrd's tests run on: its name, for t.Run,
// and how to get the DSN of a fresh database.
type DB struct {
	Name string
	DSN  func(tb testing.TB) string
}

// DBs are the backends of addrd's store: SQLite in a temporary
// directory and a throwaway PostgreSQL database (Postgres: skipped where
// PostgreSQL is not installed).
func DBs() []DB {
	return []DB{{"SQLite", SQLite}, {"PostgreSQL", Postgres}}
}

// SQLite returns the DSN of a fresh SQLite database in tb's temporary
// directory.
func SQLite(tb testing.TB) string { return filepath.Join(tb.TempDir(), "addrd.db") }

// ForEachDB runs f as a subtest on each backend of DBs, with the DSN of a
// fresh database.
func ForEachDB(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Helper()
	for _, d := range DBs() {
		t.Run(d.Name, func(t *testing.T) { f(t, d.DSN(t)) })
	}
}
