// Package sqlitewal switches a SQLite file to write-ahead logging in a way
// that several processes opening a new file at once all survive.
package sqlitewal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Attempts bounds Enable's tries: with waits of 1 ms doubling to 200 ms,
// about 10 s in all, as long as a busy_timeout(10000) waits for a lock.
const Attempts = 58

// Enable switches the database named by dsn (a modernc.org/sqlite data
// source name) to WAL. The mode is stored in the file, so this is a no-op
// after the first time. The first switch needs an exclusive lock that
// SQLite takes without calling its busy handler, so two processes (or two
// pools of one process) opening a new file at once could see SQLITE_BUSY
// at once, whatever busy_timeout says. Enable retries it.
func Enable(ctx context.Context, dsn string) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	wait := time.Millisecond
	for attempt := 1; ; attempt++ {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		switch {
		case err == nil && mode == "wal":
			return nil
		case err == nil:
			return fmt.Errorf("journal mode is %q, want wal", mode)
		case !busy(err) || attempt == Attempts:
			return fmt.Errorf("switch to WAL: %w", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("switch to WAL: %w", context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// busy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func busy(err error) bool {
	var serr *sqlite.Error
	return errors.As(err, &serr) && serr.Code()&0xff == sqlite3.SQLITE_BUSY
}
