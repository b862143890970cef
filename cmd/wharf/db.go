package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/site/auth"
)

// openDB opens --db for a command. A SQLite file that does not exist is
// created only when --db (or WHARF_DB) names it, with a line on stderr
// saying so; the default ./wharf.db is never created implicitly unless
// create is set (wharf serve): an admin command run in the wrong directory
// would otherwise make a database of its own, and the key or token it
// prints would fail against the real server.
func openDB(ctx context.Context, c *cli.Context, create bool) (*auth.DB, error) {
	dsn := c.String("db")
	if isPostgres(dsn) || dsn == ":memory:" {
		return auth.Open(ctx, dsn)
	}
	if scheme, _, ok := strings.Cut(dsn, "://"); ok {
		return nil, fmt.Errorf("--db %s: no database of kind %q: give a SQLite file (PATH or file:PATH) or postgres://USER@HOST/DB", dsn, scheme)
	}
	path := strings.TrimPrefix(dsn, "file:")
	path, _, _ = strings.Cut(path, "?")
	_, err := os.Stat(path)
	missing := errors.Is(err, fs.ErrNotExist)
	if missing && !c.IsSet("db") && !create {
		abs, _ := filepath.Abs(path)
		return nil, fmt.Errorf("no database at %s: give the server's database with --db or WHARF_DB (an explicit --db of a new file creates it)", abs)
	}
	db, err := auth.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if missing {
		abs, _ := filepath.Abs(path)
		fmt.Fprintf(c.App.ErrWriter, "wharf: created a new database %s (mode 0600)\n", abs)
	}
	return db, nil
}

func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}
