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
// DB.Close. database/sql prepares a statement again on each pooled
// connection as needed; on PostgreSQL a request then skips parsing and
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
	var errs []error
	for _, s := range c.m {
		errs = append(errs, s.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}
