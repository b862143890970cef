package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// stmtCache holds the statements of the hot reads, prepared on first use
// (so that Open succeeds while the database is away) and closed by
// DB.Close. database/sql prepares a statement again on
// each pooled connection as needed; a request then skips parsing and
// planning. The queries are constants written with $n placeholders, which
// both dialects take.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns the statement of query, preparing it on db if needed.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[query]; ok {
		return s, nil
	}
	s, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = s
	return s, nil
}

// close closes the statements prepared.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := closeStmts(c.m)
	c.m = nil
	return err
}

// closeStmts closes the statements of m, joining their errors.
func closeStmts[K comparable](m map[K]*sql.Stmt) error {
	var errs []error
	for _, s := range m {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// queryHot runs one of the hot reads as a prepared statement, on either
// database: none is parsed nor planned per request. On SQLite, parsing
// and planning were half of a balances request's CPU, more than the read
// itself (BenchmarkHTTP's profile; an earlier measurement that found a
// database/sql Stmt 10% slower there was taken with ANALYZE's statistics
// in the file, which make SQLite compile a statement again at every new
// binding anyway).
func (db *DB) queryHot(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	stmt, err := db.stmts.get(ctx, db.r.DB, query)
	if err != nil {
		return nil, err
	}
	return stmt.QueryContext(ctx, args...)
}

// queryHotRow is queryHot of one row, scanned into dest; sql.ErrNoRows
// when there is none.
func (db *DB) queryHotRow(ctx context.Context, query string, args []any, dest ...any) error {
	rows, err := db.queryHot(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}
