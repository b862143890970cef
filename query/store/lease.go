package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
	"github.com/uptrace/bun"

	"github.com/wharfhq/wharf/query"
)

// Leases live in fetch_leases and are timed by the database's clock, so
// that replicas on machines whose clocks disagree still agree on when a
// lease expires. A write transaction made with a ctx carrying a lease
// first checks that the lease is still held (db.tx), on PostgreSQL with
// the row locked FOR SHARE until the commit: a takeover waits for the
// old holder's transaction to end, and the old holder's next transaction
// finds the lease gone.

// nowMillis is the database's clock in milliseconds since the epoch.
func (db *DB) nowMillis() string {
	if db.postgres {
		return "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}

// AcquireLease takes chain's lease for holder when it is free or has
// expired, with the next generation; otherwise held is false and l is
// the current lease.
func (db *DB) AcquireLease(ctx context.Context, chain, holder string, ttl time.Duration) (l query.Lease, held bool, err error) {
	now := db.nowMillis()
	err = db.w.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if db.postgres {
			// Behind a holder's open transaction (which locks the row
			// until it ends), wait no longer than a follower's retry.
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(1, (ttl/5).Milliseconds()))); err != nil {
				return err
			}
		}
		var gen int64
		err := tx.NewRaw(`INSERT INTO fetch_leases (chain, holder, generation, expires_ms) VALUES (?, ?, 1, `+now+` + ?)
			ON CONFLICT (chain) DO UPDATE SET holder = excluded.holder, generation = fetch_leases.generation + 1,
				expires_ms = excluded.expires_ms, head = 0, progress_ms = 0, problem = ''
			WHERE fetch_leases.expires_ms <= `+now+`
			RETURNING generation`, chain, holder, ttl.Milliseconds()).Scan(ctx, &gen)
		switch {
		case err == nil:
			held = true
		case !isNoRows(err):
			return err
		}
		l, err = db.chainLease(ctx, tx, chain)
		return err
	})
	var perr *pq.Error
	if errors.As(err, &perr) && perr.Code == "55P03" { // lock_not_available: the holder is writing
		l, err = db.ChainLease(ctx, chain)
		return l, false, err
	}
	if err != nil {
		return query.Lease{}, false, wrap("acquire lease "+chain, err)
	}
	return l, held, nil
}

// RenewLease extends l to ttl from now and records the holder's report:
// its progress is stamped by the database's clock. Errors:
// query.ErrLeaseLost.
func (db *DB) RenewLease(ctx context.Context, l query.Lease, ttl time.Duration, r query.LeaderReport) (query.Lease, error) {
	now := db.nowMillis()
	progress := "0"
	if r.Progress >= 0 {
		progress = now + " - " + fmt.Sprint(r.Progress.Milliseconds())
	}
	var left int64
	err := db.w.NewRaw(`UPDATE fetch_leases SET expires_ms = `+now+` + ?, head = ?, progress_ms = `+progress+`, problem = ?
		WHERE chain = ? AND generation = ? AND expires_ms > `+now+`
		RETURNING expires_ms - `+now, ttl.Milliseconds(), r.Head, r.Problem, l.Chain, l.Generation).Scan(ctx, &left)
	if isNoRows(err) {
		return l, fmt.Errorf("store: renew lease %s generation %d: %w", l.Chain, l.Generation, query.ErrLeaseLost)
	}
	if err != nil {
		return l, wrap("renew lease "+l.Chain, err)
	}
	l.Left, l.Head, l.Progress, l.Problem = time.Duration(left)*time.Millisecond, r.Head, r.Progress, r.Problem
	return l, nil
}

// ReleaseLease ends l at once if it is still held.
func (db *DB) ReleaseLease(ctx context.Context, l query.Lease) error {
	_, err := db.w.NewRaw(`UPDATE fetch_leases SET expires_ms = `+db.nowMillis()+`
		WHERE chain = ? AND generation = ? AND expires_ms > `+db.nowMillis(), l.Chain, l.Generation).Exec(ctx)
	return wrap("release lease "+l.Chain, err)
}

// ChainLease returns chain's lease, held or expired. Errors:
// query.ErrNotFound.
func (db *DB) ChainLease(ctx context.Context, chain string) (query.Lease, error) {
	l, err := db.chainLease(ctx, db.w, chain)
	return l, wrap("lease "+chain, err)
}

func (db *DB) chainLease(ctx context.Context, tx bun.IDB, chain string) (query.Lease, error) {
	l := query.Lease{Chain: chain}
	var left, head, progress int64
	now := db.nowMillis()
	err := tx.NewRaw(`SELECT holder, generation, expires_ms - `+now+`, head,
			CASE WHEN progress_ms = 0 THEN -1 ELSE `+now+` - progress_ms END, problem
		FROM fetch_leases WHERE chain = ?`, chain).
		Scan(ctx, &l.Holder, &l.Generation, &left, &head, &progress, &l.Problem)
	l.Left, l.Head, l.Progress = time.Duration(left)*time.Millisecond, uint64(head), time.Duration(progress)*time.Millisecond
	return l, err
}

// fence checks, inside a write transaction, that l is still held.
//
// On PostgreSQL the lease row stays locked (FOR SHARE) until the
// transaction ends, so that no takeover happens in between; and the
// transaction may sit idle no longer than the lease has left: a holder
// frozen in the middle of it has its session ended by the server when
// its lease runs out, which frees the row for the next holder. Errors:
// query.ErrLeaseLost.
func (db *DB) fence(ctx context.Context, tx bun.Tx, l query.Lease) error {
	now := db.nowMillis()
	q := `SELECT generation FROM fetch_leases WHERE chain = ? AND generation = ? AND expires_ms > ` + now
	if db.postgres {
		q = `SELECT generation, set_config('idle_in_transaction_session_timeout', (expires_ms - ` + now + `)::text, true)
			FROM fetch_leases WHERE chain = ? AND generation = ? AND expires_ms > ` + now + ` FOR SHARE`
	}
	var gen int64
	var timeout string
	dest := []any{&gen}
	if db.postgres {
		dest = append(dest, &timeout)
	}
	err := tx.NewRaw(q, l.Chain, l.Generation).Scan(ctx, dest...)
	if isNoRows(err) {
		return fmt.Errorf("lease %s generation %d: %w", l.Chain, l.Generation, query.ErrLeaseLost)
	}
	return err
}
