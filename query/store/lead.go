package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"hash/fnv"
	"sync"
	"time"
)

// Lead blocks until this process is the one fetcher of chain, or ctx
// ends. On PostgreSQL the leader holds a session advisory lock, keyed by
// a hash of the chain's name, on a connection of its own: when the
// process dies, or its connection does, the server drops the lock and a
// follower, trying every retry, takes over. The leader checks its
// connection every retry too and ends lead when it is gone. On SQLite,
// where only one process writes a database file, Lead succeeds at once.
//
// release gives the lead up; it may be called more than once.
func (db *DB) Lead(ctx context.Context, chain string, retry time.Duration) (lead context.Context, release func(), err error) {
	if retry <= 0 {
		retry = 5 * time.Second
	}
	if !db.postgres {
		lead, cancel := context.WithCancel(ctx)
		return lead, cancel, nil
	}
	key := leadKey(chain)
	for {
		conn, ok, err := db.tryLock(ctx, key)
		if err != nil && ctx.Err() != nil {
			return nil, nil, fmt.Errorf("store: lead %s: %w", chain, ctx.Err())
		}
		if err != nil {
			return nil, nil, wrap("lead "+chain, err)
		}
		if ok {
			return db.hold(ctx, conn, retry)
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("store: lead %s: %w", chain, ctx.Err())
		case <-t.C:
		}
	}
}

// leadKey is the advisory lock key of chain's fetcher.
func leadKey(chain string) int64 {
	h := fnv.New64a()
	h.Write([]byte("wharf addrd fetcher " + chain))
	return int64(h.Sum64())
}

// tryLock takes the lock on a dedicated connection, which it returns
// when it got the lock and closes otherwise.
func (db *DB) tryLock(ctx context.Context, key int64) (*sql.Conn, bool, error) {
	conn, err := db.w.DB.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		discard(conn)
		return nil, false, err
	}
	if !ok {
		conn.Close()
		return nil, false, nil
	}
	return conn, true, nil
}

// hold keeps the lead while conn answers, checking every retry.
func (db *DB) hold(ctx context.Context, conn *sql.Conn, retry time.Duration) (context.Context, func(), error) {
	lead, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(retry)
		defer t.Stop()
		for {
			select {
			case <-lead.Done():
				return
			case <-t.C:
			}
			if _, err := conn.ExecContext(lead, "SELECT 1"); err != nil {
				cancel() // the connection, and with it the lock, is gone
				return
			}
		}
	}()
	var once sync.Once
	release := func() {
		once.Do(func() {
			cancel()
			<-done
			// Closing the session is what surely drops a session lock.
			discard(conn)
		})
	}
	return lead, release, nil
}

// discard closes conn's session rather than returning it to the pool,
// so that no session lock survives in a pooled connection.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
